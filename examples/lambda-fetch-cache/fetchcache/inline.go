package fetchcache

import (
	"context"
	"errors"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// NewInlineHandler returns the function's handler in the inline answer
// mode (ANSWER_MODE=inline): no cache table. The invocation that holds the
// lock on the item fetches it from the upstream, and lockmw publishes its
// Response in the lock item with the release; the waiters of the burst
// return that same Response, and so do invocations that arrive less than
// fresh after it (lockcore.WithFreshSuccess), from their first request to
// the lock table. Every invocation of a burst therefore answers with the
// holder's Response byte for byte (its outcome ACQUIRED, its fence and
// wait); which invocation waited is in the metrics and logs.
//
// opts come after the handler's own options (group, lock options), so they
// can add metrics, logging and tracing. The handler is safe for concurrent
// use.
func NewInlineHandler(store storeapi.Store, group string, fresh time.Duration, up *Upstream, opts ...lockmw.Option) (func(context.Context, Request) (Response, error), error) {
	a := &app{upstream: up, now: time.Now}
	base := []lockmw.Option{
		lockmw.WithLockGroup(group),
		lockmw.WithLockOptions(lockcore.WithFreshSuccess(fresh)),
	}
	locked, err := lockmw.New(a.fetchInline, store, Key, append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req Request) (Response, error) {
		id, err := Key(ctx, req)
		if err != nil {
			return Response{}, err
		}
		return locked(ctx, Request{Pair: id})
	}, nil
}

// fetchInline runs while holding the lock, in the inline answer mode.
func (a *app) fetchInline(ctx context.Context, req Request) (Response, error) {
	info, ok := lockmw.FromContext(ctx)
	if !ok {
		return Response{}, errors.New("fetchcache: no lock information in the context")
	}
	data, err := a.upstream.Fetch(ctx, req.Pair)
	if err != nil {
		return Response{}, err
	}
	return Response{
		Pair:        req.Pair,
		Data:        data,
		Source:      SourceUpstream,
		Fence:       info.Fence,
		Outcome:     info.Outcome.String(),
		TookOver:    info.TookOver,
		AfterFail:   info.AfterFailure,
		WaitedMs:    info.Waited.Milliseconds(),
		Polls:       info.Polls,
		FetchedAtMs: a.now().UnixMilli(),
	}, nil
}
