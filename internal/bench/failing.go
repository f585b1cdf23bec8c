package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/internal/sandbox"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Settings of the failing-upstream figure.
const (
	// FailFor is how long the upstream fails, from the burst's first call.
	FailFor = 3 * time.Second
	// FailingTimeout is the function timeout of each invocation.
	FailingTimeout = 10 * time.Second
)

// Ways the upstream of the failing-upstream figure fails.
const (
	Fail429 = "429, Retry-After = time left"
	Fail503 = "503, no Retry-After"
)

// FailingResult is one burst of invocations, through lockmw on Dynoxide,
// against an upstream that fails for FailFor from the first call and then
// recovers. The holders call it with the example's client, whose errors
// carry the Retry-After and a failure code.
type FailingResult struct {
	Mode      string  `json:"mode"`
	N         int     `json:"n"`
	FailForMs float64 `json:"failForMs"`
	// CallsInWindow is the upstream calls that arrived while it failed;
	// Calls counts all of the burst's.
	CallsInWindow int `json:"upstreamCallsInWindow"`
	Calls         int `json:"upstreamCalls"`
	// Data is the invocations that answered with data; Unavailable those
	// that answered with the error naming the failure and when to retry:
	// a holder's own upstream error, or the shared failure
	// (lockcore.ErrHolderFailed).
	Data        int `json:"data"`
	Unavailable int `json:"unavailable"`
	// Other counts any other answer; Errors holds the first 5.
	Other  int      `json:"other"`
	Errors []string `json:"errors,omitempty"`
	// AllAnsweredMs is the time from the burst's start until every
	// invocation had answered; Answer summarises each invocation's.
	AllAnsweredMs float64 `json:"allAnsweredMs"`
	Answer        Summary `json:"answer"`
	Requests      Delta   `json:"requests"`
}

// RunFailing starts n invocations at once on a fresh key against an
// upstream that fails as mode says for FailFor, and waits for all of them.
func RunFailing(ctx context.Context, env *Env, mode string, n int) (FailingResult, error) {
	cfg := sandbox.UpstreamConfig{ThrottleFirst: FailFor}
	if mode == Fail503 {
		cfg.FailStatus, cfg.NoRetryAfter = http.StatusServiceUnavailable, true
	}
	up := sandbox.StartUpstream(cfg)
	defer up.Close()
	base, err := url.Parse(up.URL())
	if err != nil {
		return FailingResult{}, err
	}
	client := fetchcache.NewUpstream(base, &http.Client{Timeout: FailingTimeout})
	key := keyName("failing")

	var stored sync.Map // key -> json.RawMessage: the cache the holder fills
	hs := lockmw.Handlers[string, json.RawMessage]{
		Fetch: func(ctx context.Context, k string) (json.RawMessage, error) {
			data, err := client.Fetch(ctx, k)
			if err == nil {
				stored.Store(k, data)
			}
			return data, err
		},
		OnReleased: func(_ context.Context, k string) (json.RawMessage, error) {
			if v, ok := stored.Load(k); ok {
				return v.(json.RawMessage), nil
			}
			return nil, errors.New("bench: released with nothing stored")
		},
	}
	handlers := make([]func(context.Context, string) (json.RawMessage, error), n)
	for i := range handlers {
		a := env.NewActor()
		h, err := lockmw.NewHandlers(hs, a.Store, func(_ context.Context, k string) (string, error) { return k, nil },
			lockmw.WithLockGroup("bench"),
			lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}),
			lockmw.WithHolder(lockmw.Holder{Name: func(context.Context) string { return fmt.Sprintf("invocation-%d", i) }}),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: discard}),
			lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
			lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)),
		)
		if err != nil {
			return FailingResult{}, err
		}
		handlers[i] = h
	}

	errs := make([]error, n)
	answered := make([]time.Time, n)
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for i, h := range handlers {
		wg.Go(func() {
			<-begin
			ictx, cancel := context.WithTimeout(ctx, FailingTimeout)
			defer cancel()
			_, errs[i] = h(ictx, key)
			answered[i] = time.Now()
		})
	}
	snap := env.Counter.Snapshot()
	close(begin)
	wg.Wait()

	r := FailingResult{Mode: mode, N: n, FailForMs: ms(FailFor), Requests: env.Counter.Since(snap)}
	arrivals := up.ArrivalsFor(key)
	r.Calls = len(arrivals)
	for _, a := range arrivals {
		if a.At.Before(arrivals[0].At.Add(FailFor)) {
			r.CallsInWindow++
		}
	}
	var times []float64
	for i, err := range errs {
		times = append(times, ms(answered[i].Sub(snap.At)))
		var ue *fetchcache.UpstreamError
		switch {
		case err == nil:
			r.Data++
		case errors.As(err, &ue), errors.Is(err, lockcore.ErrHolderFailed):
			r.Unavailable++
		default:
			r.Other++
			if len(r.Errors) < 5 {
				r.Errors = append(r.Errors, err.Error())
			}
		}
	}
	r.Answer = Summarize(times)
	r.AllAnsweredMs = r.Answer.Max
	return r, nil
}

// writeFailingRows prints the rows of the failing-upstream figure.
func writeFailingRows(row func(...string), r *Results) {
	for _, f := range r.Failing {
		p := fmt.Sprintf("9 N=%d", f.N)
		row(p, fmt.Sprintf("%s for %.0f s: upstream calls while failing", f.Mode, f.FailForMs/1000),
			fmt.Sprint(f.CallsInWindow), "", "<= 2", Verdict(f.CallsInWindow <= 2))
		row(p, "  upstream calls in all", fmt.Sprint(f.Calls), "", "", "")
		row(p, "  answers: data / unavailable / other", fmt.Sprintf("%d / %d / %d", f.Data, f.Unavailable, f.Other), "", "other 0", Verdict(f.Other == 0))
		row(p, "  answer time p50, all answered after", fmt.Sprintf("%.0f ms, %.0f ms", f.Answer.P50, f.AllAnsweredMs), "", "", "")
	}
}
