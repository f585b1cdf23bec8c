package storetest

import (
	"context"
	"errors"
	"time"
)

// shrink turns a lane's failing sequence into a short one that still
// fails, replaying candidates on fresh keys:
//
//  1. prefix truncation: the sequence ends at its first disagreement (every
//     shorter prefix agrees, or that would have been the first);
//  2. the steps on other keys than the failing step's are dropped, when
//     the rest still fails;
//  3. step deletion: chunks of half, a quarter, ... down to single steps
//     are deleted while the rest still fails, each success truncated again
//     at its new first disagreement, until no single step can go.
//
// Step deletion stops at opts.ShrinkTime; the failure says whether it ran
// to the end.
func (r *runner) shrink(ctx context.Context, failed *laneResult) (*DiffFailure, error) {
	deadline := time.Now().Add(r.opts.ShrinkTime)
	f := &DiffFailure{Lane: failed.lane, Step: failed.failAt}
	ops := failed.ops[:failed.failAt+1]

	// try replays cand and, when it still fails, returns it cut at its
	// first disagreement.
	try := func(cand []op) ([]op, bool, error) {
		if time.Now().After(deadline) {
			return nil, false, errBudget
		}
		f.Replays++
		at, err := r.replay(ctx, failed.lane, cand)
		if err != nil || at < 0 {
			return nil, false, err
		}
		return cand[:at+1], true, nil
	}

	err := func() error {
		last := ops[len(ops)-1].key
		var same []op
		for _, o := range ops {
			if o.key == last {
				same = append(same, o)
			}
		}
		if len(same) < len(ops) {
			if cand, ok, err := try(same); err != nil {
				return err
			} else if ok {
				ops = cand
			}
		}
		for size := max(len(ops)/2, 1); ; {
			deleted := false
			for i := 0; i < len(ops); {
				cand := append(ops[:i:i], ops[min(i+size, len(ops)):]...)
				shorter, ok, err := try(cand)
				if err != nil {
					return err
				}
				if ok {
					ops, deleted = shorter, true
					continue
				}
				i += size
			}
			switch {
			case size > 1:
				size /= 2
			case !deleted:
				return nil
			}
		}
	}()
	switch {
	case errors.Is(err, errBudget):
	case err != nil:
		return nil, err
	default:
		f.Complete = true
	}
	steps, server, diffs, err := r.describe(ctx, failed.lane, ops)
	if err != nil {
		return nil, err
	}
	f.Steps, f.Server, f.Diffs = steps, server, diffs
	return f, nil
}
