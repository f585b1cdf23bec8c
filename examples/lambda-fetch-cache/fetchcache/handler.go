package fetchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Request is the invocation's event: the item to fetch, such as a currency
// pair.
type Request struct {
	Pair string `json:"pair"`
}

// Sources of a [Response].
const (
	SourceUpstream = "upstream" // this invocation called the upstream
	SourceCache    = "cache"    // read from the cache table
)

// OutcomeNone is the [Response] outcome of an invocation that found a fresh
// cache entry before taking the lock, and so took none. The other outcomes
// are lockcore's: ACQUIRED and RELEASED.
const OutcomeNone = "NONE"

// Response is the invocation's answer: the upstream's document and where it
// came from.
type Response struct {
	Pair        string          `json:"pair"`
	Data        json.RawMessage `json:"data"`
	Source      string          `json:"source"`
	Fence       int64           `json:"fence"` // the fence of the holder that fetched Data
	Outcome     string          `json:"outcome"`
	TookOver    bool            `json:"tookOver,omitempty"`     // acquired by taking over an abandoned lease
	AfterFail   bool            `json:"afterFailure,omitempty"` // acquired after the previous holder published a failure
	WaitedMs    int64           `json:"waitedMs"`
	Polls       int             `json:"polls"`
	FetchedAtMs int64           `json:"fetchedAtMs"`
}

// ErrBadRequest: the event does not name a valid item.
var ErrBadRequest = errors.New("fetchcache: bad request")

var pairPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Key returns the lock id of req: its item name, checked.
func Key(_ context.Context, req Request) (string, error) {
	p := strings.TrimSpace(req.Pair)
	if !pairPattern.MatchString(p) {
		return "", fmt.Errorf("%w: pair %q must be 1 to 128 letters, digits, '.', '_' or '-'", ErrBadRequest, req.Pair)
	}
	return p, nil
}

// Metrics the handler adds to its invocation's EMF document, next to the
// lock's (lockmw.Metrics).
const (
	MetricUpstreamCall = "UpstreamCall" // Count: the holder called the upstream
	MetricCacheRead    = "CacheRead"    // Count: a waiter read the holder's result from the cache
)

// app holds what the handler needs.
type app struct {
	cache    *Cache
	upstream *Upstream
	now      func() time.Time
}

// NewHandler returns the function's handler:
//
//  1. a consistent read of the cache: a fresh entry is the answer, and no
//     lock is taken (outcome NONE);
//  2. otherwise the lock on the item, through [lockmw.NewHandlers]. The
//     holder (ACQUIRED, also after a take-over) reads the cache again,
//     fetches from the upstream only if it is still not fresh, and writes
//     the cache conditioned on its fence; waiters that see the holder's
//     success (RELEASED) read the cache.
//  3. when the upstream fails, the holder answers an [*UnavailableError]
//     whose retry hints the lock publishes with its failure release; the
//     waiters that the lock then ends with the shared failure
//     (lockcore.ErrHolderFailed) answer an [*UnavailableError] too, with
//     the published reason and not-before.
//
// opts come after the handler's own options (group, lock options), so they
// can add metrics, logging and tracing. The handler is safe for concurrent
// use.
func NewHandler(store storeapi.Store, group string, cache *Cache, up *Upstream, opts ...lockmw.Option) (func(context.Context, Request) (Response, error), error) {
	a := &app{cache: cache, upstream: up, now: time.Now}
	base := []lockmw.Option{
		lockmw.WithLockGroup(group),
		// An invocation of the burst that misses the cache read but
		// arrives after the holder published reads the cache too.
		lockmw.WithLockOptions(lockcore.WithFreshSuccess(cache.ttl)),
	}
	locked, err := lockmw.NewHandlers(lockmw.Handlers[Request, Response]{
		Fetch:      a.fetch,
		OnReleased: a.read,
		OnFailed:   a.onFailed,
		ResultRef:  resultRef,
	}, store, Key, append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req Request) (Response, error) {
		id, err := Key(ctx, req)
		if err != nil {
			return Response{}, err
		}
		e, found, err := a.cache.Get(ctx, id)
		if err != nil {
			return Response{}, err
		}
		if found && e.fresh(a.now()) {
			return fromEntry(e, OutcomeNone, lockmw.Info{}), nil
		}
		return locked(ctx, Request{Pair: id})
	}, nil
}

// fetch runs while holding the lock.
func (a *app) fetch(ctx context.Context, req Request) (Response, error) {
	info, ok := lockmw.FromContext(ctx)
	if !ok {
		return Response{}, errors.New("fetchcache: no lock information in the context")
	}
	return a.fetchHeld(ctx, req, info)
}

// fetchHeld is fetch for the holder of the lock that info describes.
func (a *app) fetchHeld(ctx context.Context, req Request, info lockmw.Info) (Response, error) {
	// Another holder may have filled the cache between our first read and
	// our acquisition.
	e, found, err := a.cache.Get(ctx, req.Pair)
	if err != nil {
		return Response{}, err
	}
	if found && e.fresh(a.now()) {
		return fromEntry(e, info.Outcome.String(), info), nil
	}
	data, err := a.upstream.Fetch(ctx, req.Pair)
	_ = lockmw.Metrics(ctx).Add(MetricUpstreamCall, emf.Count, 1) // in this invocation's own document
	if err != nil {
		return Response{}, ownFailure(req.Pair, err, a.now())
	}
	e, err = a.cache.Put(ctx, req.Pair, data, info.Fence)
	if errors.Is(err, ErrStaleFence) {
		// A newer holder stored newer data: answer with that.
		e, found, err = a.cache.Get(ctx, req.Pair)
		if err == nil && !found {
			err = fmt.Errorf("fetchcache: %s: cache entry vanished after a fenced write was refused", req.Pair)
		}
		if err != nil {
			return Response{}, err
		}
		return fromEntry(e, info.Outcome.String(), info), nil
	}
	if err != nil {
		return Response{}, err
	}
	r := fromEntry(e, info.Outcome.String(), info)
	r.Source = SourceUpstream
	return r, nil
}

// read runs when another invocation fetched and published success.
func (a *app) read(ctx context.Context, req Request) (Response, error) {
	info, _ := lockmw.FromContext(ctx)
	_ = lockmw.Metrics(ctx).Add(MetricCacheRead, emf.Count, 1)
	e, found, err := a.cache.Get(ctx, req.Pair)
	if err != nil {
		return Response{}, err
	}
	if !found {
		return Response{}, fmt.Errorf("fetchcache: %s: holder with fence %d published success but the cache has no entry", req.Pair, info.Fence)
	}
	// The holder published the fence of the entry it answered with, which
	// is older than its own fence when it found the entry already fresh.
	if want, ok := refFence(info.ResultRef); ok && e.Fence < want {
		return Response{}, fmt.Errorf("fetchcache: %s: cache entry has fence %d, older than the published %d", req.Pair, e.Fence, want)
	}
	return fromEntry(e, info.Outcome.String(), info), nil
}

func fromEntry(e Entry, outcome string, info lockmw.Info) Response {
	return Response{
		Pair:        e.ID,
		Data:        e.Data,
		Source:      SourceCache,
		Fence:       e.Fence,
		Outcome:     outcome,
		TookOver:    info.TookOver,
		AfterFail:   info.AfterFailure,
		WaitedMs:    info.Waited.Milliseconds(),
		Polls:       info.Polls,
		FetchedAtMs: e.FetchedAt.UnixMilli(),
	}
}

// resultRef is what the holder publishes with its release: the item and
// the fence of the cache entry it answered with.
func resultRef(r Response) string { return r.Pair + "@" + strconv.FormatInt(r.Fence, 10) }

// refFence reads the fence back from a resultRef.
func refFence(ref string) (int64, bool) {
	i := strings.LastIndexByte(ref, '@')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(ref[i+1:], 10, 64)
	return n, err == nil
}
