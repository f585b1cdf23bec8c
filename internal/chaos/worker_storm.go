package chaos

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// holdStorm is the hold of a storm cycle: fetch the upstream, which fails
// in the parent's failing stretches, and on a failure release as one, with
// the upstream's Retry-After as the not-before; else write, work (now and
// then up to the hard maximum), write again and release.
func (w *worker) holdStorm(ctx context.Context, key string, h holder, vw *validWatch) {
	fence, rev := h.Fence(), h.Revision()
	status, retryAfter := w.fetch(key, rev)
	if status != http.StatusOK {
		o := outcome{reason: "upstream_" + strconv.Itoa(status)}
		if retryAfter > 0 {
			o.notBefore = w.clock.Now().Add(retryAfter)
		}
		w.release(ctx, key, h, fence, rev, o, vw)
		return
	}
	wrote := w.act(key, h, fence, rev)
	sleepCtx(h.Context(), w.stormWork())
	wrote = w.act(key, h, fence, rev) || wrote
	if w.rng.Float64() < w.spec.FreezeAfterReturnP {
		w.post("/freeze", nil) // return without releasing, and be frozen
	}
	w.release(ctx, key, h, fence, rev, outcome{success: wrote && h.Valid(), reason: "invalid"}, vw)
}

// fetch calls the counted upstream for key as the holder of rev and
// returns its status (0 when it did not answer) and Retry-After.
func (w *worker) fetch(key, rev string) (int, time.Duration) {
	q := url.Values{"key": {key}, "rev": {rev}, "w": {strconv.Itoa(w.spec.Slot)}}
	resp, err := w.http.Post(w.spec.Resource+"/fetch?"+q.Encode(), "text/plain", nil)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, time.Duration(secs) * time.Second
}

// stormWork draws a storm holder's work: for the worker's first storm
// hold that fetched (when NearMaxHoldP is set) and then with NearMaxHoldP,
// from a lease before the hard maximum to half a lease past it; else as
// workTime. The first is not left to chance: with brownouts, kills, the
// operator and a failing upstream, a short storm's draws alone sometimes
// leave no hold that reaches the maximum.
func (w *worker) stormWork() time.Duration {
	first := w.spec.NearMaxHoldP > 0 && !w.nearMaxDrawn.Swap(true)
	if first || w.rng.Float64() < w.spec.NearMaxHoldP {
		lo, hi := w.spec.MaxHold-w.spec.Lease, w.spec.MaxHold+w.spec.Lease/2
		return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
	}
	return w.workTime()
}
