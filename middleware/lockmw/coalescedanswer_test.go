package lockmw_test

import (
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// aliasingBytesCodec publishes a []byte result as it is: Decode returns
// the bytes it is given, which Decode(Encode(v)) allows.
type aliasingBytesCodec struct{}

func (aliasingBytesCodec) Encode(v []byte) ([]byte, error) { return v, nil }
func (aliasingBytesCodec) Decode(b []byte) ([]byte, error) { return b, nil }

// TestCoalescedFollowersOwnTheirAnswers: each invocation gets an answer of
// its own, as each waiter on the store reads its own copy of the lock item:
// a caller that changes the bytes one follower returned does not change
// what another returned.
func TestCoalescedFollowersOwnTheirAnswers(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
	}{
		{"waiting on the store", false},
		{"coalesced", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, err := lockmw.NewHandlers(lockmw.Handlers[event, []byte]{
					Fetch: func(ctx context.Context, e event) ([]byte, error) {
						time.Sleep(time.Second)
						return []byte("rate 1.08"), nil
					},
					Codec: aliasingBytesCodec{},
				}, lockcore.NewMemoryStore(), keyOf, lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}),
					lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(t, io.Discard)}), coalescing(tt.coalesce))
				if err != nil {
					t.Fatalf("NewHandlers() = %v", err)
				}
				const n = 3
				outs, errs := make([][]byte, n), make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						ctx, cancel := invocationContext(t.Context(), time.Minute, "req-"+strconv.Itoa(i))
						defer cancel()
						outs[i], errs[i] = h(ctx, event{Key: "EUR-USD", N: i})
					})
					if i == 0 {
						synctest.Wait() // the leader holds the lock before the others come
					}
				}
				wg.Wait()
				for i := range n {
					if errs[i] != nil || string(outs[i]) != "rate 1.08" {
						t.Fatalf("invocation %d: %q, %v; want the answer", i, outs[i], errs[i])
					}
				}
				outs[1][0] = 'X' // the caller of invocation 1 reuses its buffer
				if string(outs[2]) != "rate 1.08" {
					t.Errorf("invocation 2's answer became %q when invocation 1's caller changed its own", outs[2])
				}
			})
		})
	}
}
