package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// ProcessHerdResult is figure 7: K concurrent invocations on one key in ONE
// process (Lambda Managed Instances, AWS_LAMBDA_MAX_CONCURRENCY = K), all
// through one lockmw-wrapped handler on one DynamoDB client, the holder
// working HerdWork; Trials herds, each on a fresh key.
type ProcessHerdResult struct {
	K      int `json:"k"`
	Trials int `json:"trials"`
	// LockRequests is the DynamoDB requests of one herd, by operation, the
	// median over the trials (the example's cache reads are not part of
	// it: the handler does no I/O).
	LockRequests map[string]float64 `json:"lockRequestsMedian"`
	// Renewals is the holder's renewals in one herd (median).
	Renewals float64 `json:"renewalsMedian"`
	// Upstream is the handler runs per herd (median): 1 when the herd
	// shared one attempt.
	Upstream float64 `json:"fetchesMedian"`
	// Coalesced is the invocations per herd that shared the holder's
	// attempt (median).
	Coalesced float64 `json:"coalescedMedian"`
	// ReleaseToLast is, per herd, the time from the return of the holder's
	// release call to the store to the return of the herd's last follower.
	ReleaseToLast   Summary   `json:"releaseToLastReturn"`
	ReleaseToLastMs []float64 `json:"releaseToLastReturnMs"`
	Errors          []string  `json:"errors,omitempty"`
}

// releaseClock records when the store's Release returned.
type releaseClock struct {
	storeapi.Store
	mu sync.Mutex // guards at
	at time.Time
}

func (s *releaseClock) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	it, err := s.Store.Release(ctx, req)
	s.mu.Lock()
	s.at = time.Now()
	s.mu.Unlock()
	return it, err
}

func (s *releaseClock) releasedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}

// RunProcessHerd runs trials herds of k invocations at once in this
// process, through one wrapped handler with in-process coalescing on.
func RunProcessHerd(ctx context.Context, env *Env, k, trials int) ProcessHerdResult {
	res := ProcessHerdResult{K: k, Trials: trials, LockRequests: map[string]float64{}}
	a := env.NewActor() // one process: one client
	store := &releaseClock{Store: a.Store}
	var fetches, coalesced atomic.Int32
	fetch := func(ctx context.Context, _ string) (string, error) {
		fetches.Add(1)
		time.Sleep(HerdWork)
		return "data", nil
	}
	read := func(ctx context.Context, _ string) (string, error) {
		if info, _ := lockmw.FromContext(ctx); info.Coalesced {
			coalesced.Add(1)
		}
		return "data", nil
	}
	key := keyName(fmt.Sprintf("process-herd-%d", k))
	h, err := lockmw.NewHandlers(lockmw.Handlers[string, string]{Fetch: fetch, OnReleased: read}, store,
		func(_ context.Context, id string) (string, error) { return id, nil },
		lockmw.WithLockGroup("bench"),
		lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: discard}),
	)
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
		return res
	}
	byOp := map[string][]float64{}
	var renewals, ups, cos []float64
	for trial := range trials {
		id := key + "-" + strconv.Itoa(trial)
		fetches.Store(0)
		coalesced.Store(0)
		snap := a.Counter.Snapshot()
		ends := make([]time.Time, k)
		errs := make([]error, k)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range k {
			ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
			ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprintf("%s-%d", id, i)})
			wg.Go(func() {
				defer cancel()
				<-start
				_, errs[i] = h(ictx, id)
				ends[i] = time.Now()
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil && len(res.Errors) < 10 {
				res.Errors = append(res.Errors, err.Error())
			}
		}
		d := a.Counter.Since(snap)
		for op, n := range d.ByOp {
			byOp[op] = append(byOp[op], float64(n))
		}
		renewals = append(renewals, float64(d.ByOp["UpdateItem"]-2))
		ups = append(ups, float64(fetches.Load()))
		cos = append(cos, float64(coalesced.Load()))
		last := ends[0]
		for _, e := range ends {
			if e.After(last) {
				last = e
			}
		}
		res.ReleaseToLastMs = append(res.ReleaseToLastMs, ms(last.Sub(store.releasedAt())))
	}
	for op, v := range byOp {
		res.LockRequests[op] = medianOf(v)
	}
	res.Renewals, res.Upstream, res.Coalesced = medianOf(renewals), medianOf(ups), medianOf(cos)
	res.ReleaseToLast = Summarize(res.ReleaseToLastMs)
	return res
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WriteProcessTable prints figure 7, one row per K, with the targets: the
// lock's DynamoDB requests 2 plus the holder's renewals, and the leader's
// release to the last follower's return at most 1 ms (median).
func WriteProcessTable(w io.Writer, rs []ProcessHerdResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(tw, strings.Join(cols, "\t")) }
	row("#", "measure", "herdlock", "target", "verdict")
	row("-", "-------", "--------", "------", "-------")
	for _, r := range rs {
		total := 0.0
		for _, v := range r.LockRequests {
			total += v
		}
		row("7", fmt.Sprintf("K=%d in one process: lock requests per herd (median of %d)", r.K, r.Trials),
			fmt.Sprintf("%.0f %v, %.0f renewals", total, r.LockRequests, r.Renewals),
			fmt.Sprintf("%.0f", 2+r.Renewals), Verdict(total <= 2+r.Renewals))
		row("7", fmt.Sprintf("K=%d: fetches, coalesced followers per herd", r.K),
			fmt.Sprintf("%.0f, %.0f", r.Upstream, r.Coalesced), fmt.Sprintf("1, %d", r.K-1),
			Verdict(r.Upstream == 1 && r.Coalesced == float64(r.K-1)))
		row("7", fmt.Sprintf("K=%d: holder's release to last follower's return p50/max", r.K),
			fmt.Sprintf("%.3f / %.3f ms", r.ReleaseToLast.P50, r.ReleaseToLast.Max), "<= 1 ms p50", Verdict(r.ReleaseToLast.P50 <= 1))
		for _, e := range r.Errors {
			row("7", fmt.Sprintf("K=%d: error", r.K), e, "", "")
		}
	}
	return tw.Flush()
}
