package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// The two ways a herd through lockmw gets the holder's answer to its
// waiters.
const (
	AnswersInline = "inline" // in the lock item, with the release
	AnswersCache  = "cache"  // the holder writes a cache table, waiters read it
)

// CacheTable is the cache table of the cache-table answers.
const CacheTable = "bench-cache"

// Quote is the herd's answer: the example's upstream document.
type Quote struct {
	Pair  string  `json:"pair"`
	Rate  float64 `json:"rate"`
	Seq   int     `json:"seq"`
	AtMs  int64   `json:"atMs"`
	Fence int64   `json:"fence"`
}

// AnswerHerdWork is how long the holder of an answer herd works: long
// enough that every invocation of a herd of 50 has made its first request
// on a loaded machine before the release.
const AnswerHerdWork = time.Second

// AnswerHerdResult is one herd of N invocations through lockmw.Wrap on one
// key, the holder working AnswerHerdWork.
type AnswerHerdResult struct {
	Mode     string `json:"mode"`
	N        int    `json:"n"`
	Upstream int    `json:"upstreamCalls"`
	Waiters  int    `json:"waiters"`
	// Late counts the waiters whose first request was answered after the
	// release: they found the published success at once (fresh success)
	// and are left out of Latency.
	Late int `json:"late"`
	// WaiterRequests is the mean of the DynamoDB requests each waiter
	// made, lock and cache table together, fallback reads (see Counter)
	// excluded.
	WaiterRequests float64 `json:"requestsPerWaiter"`
	// Latency is the waiters' time from the holder's release (the moment
	// its Fetch has worked, and stored in the cache mode) to their own
	// return.
	Latency   Summary `json:"releaseToReturn"`
	latencyMs []float64
	Errors    []string `json:"errors,omitempty"`
}

// CreateCacheTable creates the cache table of the cache-table answers.
func (e *Env) CreateCacheTable(ctx context.Context) error {
	return lockcore.CreateTable(ctx, e.Client, CacheTable)
}

// answerInvocation is what one invocation of an answer herd did.
type answerInvocation struct {
	quote    Quote
	err      error
	fetched  bool
	at       time.Time
	first    time.Time // when its first request was answered
	requests int
}

// RunAnswerHerd starts n invocations at once, each its own process (an
// Actor) with its own lockmw.Wrap, and waits for all of them. The cache
// mode needs CreateCacheTable first.
func RunAnswerHerd(ctx context.Context, env *Env, mode string, n int) AnswerHerdResult {
	key := keyName("answers-" + mode)
	var upstream atomic.Int64
	var relMu sync.Mutex
	var relAt time.Time
	work := func(fence int64) Quote {
		seq := int(upstream.Add(1))
		time.Sleep(AnswerHerdWork)
		return Quote{Pair: key, Rate: 1.0842, Seq: seq, AtMs: time.Now().UnixMilli(), Fence: fence}
	}
	invs := make([]answerInvocation, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		a := env.NewActor()
		h, err := answerHandler(a, mode, &invs[i], work, func() {
			relMu.Lock()
			relAt = time.Now()
			relMu.Unlock()
		})
		if err != nil {
			return AnswerHerdResult{Mode: mode, N: n, Errors: []string{err.Error()}}
		}
		wg.Go(func() {
			s := a.Counter.Snapshot()
			<-start
			ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			q, err := h(ictx, key)
			d := a.Counter.Since(s)
			invs[i].quote, invs[i].err, invs[i].at, invs[i].requests = q, err, time.Now(), d.Total-d.Fallbacks
			invs[i].first = a.Counter.FirstDone()
		})
	}
	close(start)
	wg.Wait()
	return summarizeAnswers(mode, n, int(upstream.Load()), relAt, invs)
}

// summarizeAnswers computes the result of a herd; every answer must be the
// holder's.
func summarizeAnswers(mode string, n, upstream int, relAt time.Time, invs []answerInvocation) AnswerHerdResult {
	r := AnswerHerdResult{Mode: mode, N: n, Upstream: upstream}
	var holder Quote
	for _, inv := range invs {
		if inv.fetched {
			holder = inv.quote
		}
	}
	var lat []float64
	requests := 0
	for i, inv := range invs {
		switch {
		case inv.err != nil:
			r.Errors = append(r.Errors, inv.err.Error())
			continue
		case inv.quote != holder:
			r.Errors = append(r.Errors, fmt.Sprintf("invocation %d answered %+v, not the holder's %+v", i, inv.quote, holder))
		}
		if inv.fetched {
			continue
		}
		r.Waiters++
		requests += inv.requests
		if inv.first.After(relAt) {
			r.Late++
			continue
		}
		lat = append(lat, ms(inv.at.Sub(relAt)))
	}
	if r.Waiters > 0 {
		r.WaiterRequests = float64(requests) / float64(r.Waiters)
	}
	r.Latency, r.latencyMs = Summarize(lat), lat
	if len(r.Errors) > 5 {
		r.Errors = r.Errors[:5]
	}
	return r
}

// answerHandler returns actor a's wrapped handler in mode; inv.fetched
// records whether its Fetch ran, and releasing is called when Fetch has
// done all but the release: worked, and in the cache mode stored.
func answerHandler(a *Actor, mode string, inv *answerInvocation, work func(fence int64) Quote, releasing func()) (func(context.Context, string) (Quote, error), error) {
	key := func(_ context.Context, k string) (string, error) { return k, nil }
	opts := []lockmw.Option{
		lockmw.WithLockGroup("bench"),
		lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: discard}),
		// A straggler that arrives after the release reads the published
		// success instead of fetching again, in both modes.
		lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)),
	}
	fetch := func(ctx context.Context, k string) (Quote, error) {
		inv.fetched = true
		info, _ := lockmw.FromContext(ctx)
		q := work(info.Fence)
		releasing()
		return q, nil
	}
	switch mode {
	case AnswersInline:
		return lockmw.New(fetch, a.Store, key, opts...)
	case AnswersCache:
		c := quoteCache{client: a.Client}
		return lockmw.NewHandlers(lockmw.Handlers[string, Quote]{
			Fetch: func(ctx context.Context, k string) (Quote, error) {
				inv.fetched = true
				info, _ := lockmw.FromContext(ctx)
				q := work(info.Fence)
				err := c.put(ctx, q)
				releasing()
				return q, err
			},
			OnReleased: c.get,
		}, a.Store, key, opts...)
	}
	return nil, fmt.Errorf("bench: answer mode %q", mode)
}

// quoteCache is the cache table of the cache-table answers: writes
// conditioned on the fence, consistent reads.
type quoteCache struct{ client *dynamodb.Client }

func (c quoteCache) put(ctx context.Context, q Quote) error {
	fence := &types.AttributeValueMemberN{Value: strconv.FormatInt(q.Fence, 10)}
	_, err := c.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(CacheTable),
		Item: map[string]types.AttributeValue{
			storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: q.Pair},
			"rate":               &types.AttributeValueMemberN{Value: strconv.FormatFloat(q.Rate, 'g', -1, 64)},
			"seq":                &types.AttributeValueMemberN{Value: strconv.Itoa(q.Seq)},
			"atMs":               &types.AttributeValueMemberN{Value: strconv.FormatInt(q.AtMs, 10)},
			"fence":              fence,
		},
		ConditionExpression:       aws.String("attribute_not_exists(fence) OR fence < :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":f": fence},
	})
	return err
}

func (c quoteCache) get(ctx context.Context, k string) (Quote, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(CacheTable),
		Key:            map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: k}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Quote{}, err
	}
	if out.Item == nil {
		return Quote{}, errors.New("bench: no cached quote")
	}
	q := Quote{Pair: k}
	for name, dst := range map[string]any{"rate": &q.Rate, "seq": &q.Seq, "atMs": &q.AtMs, "fence": &q.Fence} {
		n, ok := out.Item[name].(*types.AttributeValueMemberN)
		if !ok {
			return Quote{}, fmt.Errorf("bench: cached quote without %s", name)
		}
		if _, err := fmt.Sscan(n.Value, dst); err != nil {
			return Quote{}, fmt.Errorf("bench: cached quote %s: %w", name, err)
		}
	}
	return q, nil
}
