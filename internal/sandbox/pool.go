package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Pool is a set of sandboxes that run the same function, as Lambda runs N
// concurrent invocations in N execution environments. It is safe for
// concurrent use, one burst at a time.
type Pool struct {
	Sandboxes []*Sandbox
}

// StartPool starts n sandboxes concurrently with cfg, numbered from 0. If
// one fails to start, it stops the others and returns the error.
func StartPool(ctx context.Context, n int, cfg Config) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("sandbox: pool of %d sandboxes", n)
	}
	p := &Pool{Sandboxes: make([]*Sandbox, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { p.Sandboxes[i], errs[i] = Start(ctx, i, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Burst sends payloads[i] to sandbox i, all at once: every invocation
// waits on one start signal. It returns the invocations in sandbox order.
// len(payloads) must not exceed the pool's size.
func (p *Pool) Burst(ctx context.Context, payloads [][]byte) []Invocation {
	out := make([]Invocation, len(payloads))
	if len(payloads) > len(p.Sandboxes) {
		for i := range out {
			out[i] = Invocation{Sandbox: i, Payload: payloads[i],
				Err: fmt.Errorf("sandbox: burst of %d on a pool of %d", len(payloads), len(p.Sandboxes))}
		}
		return out
	}
	var ready, done sync.WaitGroup
	ready.Add(len(payloads))
	startSignal := make(chan struct{})
	for i, payload := range payloads {
		done.Go(func() {
			ready.Done()
			<-startSignal
			out[i] = p.Sandboxes[i].Invoke(ctx, payload)
		})
	}
	ready.Wait()
	close(startSignal)
	done.Wait()
	return out
}

// Lines returns the stdout lines of every sandbox, ordered by time.
func (p *Pool) Lines() []Line {
	var all []Line
	for _, s := range p.Sandboxes {
		if s != nil {
			all = append(all, s.Lines()...)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
	return all
}

// Close stops every sandbox.
func (p *Pool) Close() error {
	var wg sync.WaitGroup
	for _, s := range p.Sandboxes {
		if s != nil {
			wg.Go(func() { s.Close() })
		}
	}
	wg.Wait()
	return nil
}
