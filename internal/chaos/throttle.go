package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
)

// capacityModel is the capacity model between the fault proxies and
// Dynoxide: at DynamoDB's per-item limits (which this harness never
// approaches) outside throttle and storm phases, and at the item capacity
// of Config.Throttle inside them.
type capacityModel struct {
	p   *capacity.Proxy
	ln  net.Listener
	srv *http.Server
}

func startCapacity(upstream string) (*capacityModel, error) {
	p, err := capacity.New(capacity.Config{Upstream: upstream})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: capacity model listen: %w", err)
	}
	c := &capacityModel{p: p, ln: ln, srv: &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}}
	go c.srv.Serve(ln)
	return c, nil
}

func (c *capacityModel) URL() string { return "http://" + c.ln.Addr().String() }

func (c *capacityModel) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.srv.Shutdown(ctx)
	_ = c.srv.Close()
}

// setPhase sets the item capacity for a phase of kind k.
func (c *capacityModel) setPhase(k PhaseKind, t ThrottleLimits) {
	w, r := capacity.DefaultWriteUnits, capacity.DefaultReadUnits
	if k == Throttled || k == Storm {
		w, r = t.WriteUnits, t.ReadUnits
	}
	_ = c.p.SetRates(w, r) // positive by validate
}

// ThrottleLimits is the capacity of one item during a throttle phase, in
// units per second (buckets hold one second).
type ThrottleLimits struct {
	WriteUnits float64
	ReadUnits  float64
}

// throttledOps counts the store requests the capacity model throttled.
func throttledOps(ops []StoreOp) int {
	n := 0
	for _, op := range ops {
		if op.Status == http.StatusBadRequest && op.ErrType == string(capacity.ProvisionedThroughputExceeded) {
			n++
		}
	}
	return n
}
