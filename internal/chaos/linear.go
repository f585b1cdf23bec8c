package chaos

import (
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// lstate is the model's lock item (check 5): the attributes the store's
// conditions read, and what the writes set from them.
type lstate struct {
	Exists     bool
	Rel        bool
	Rev        string
	Result     string
	RelAt      int64
	ResFence   int64 // resultFence: the holder's fence, set by every release
	Fence      int64
	Beat       int64
	LU         int64
	Exp        int64
	PrevRev    string
	PrevResult string
	Failures   int64
	NotBefore  int64
	RecentTill int64
	Reason     string
}

// lout is what the store answered.
type lout struct {
	Status  int
	ErrType string
	Item    *View
}

const ccf = "ConditionalCheckFailedException"

func (o lout) ok() bool      { return o.Status == 200 }
func (o lout) refused() bool { return o.Status == 400 && o.ErrType == ccf }

// unknown: the request may or may not have been applied.
func (o lout) unknown() bool { return o.Status == 0 || o.Status >= 500 }

// apply is the pure specification of storeapi.Store's conditional writes
// (store.go), one request at a time: whether in's condition holds in st,
// and the state after it.
func apply(st lstate, in Intent) (bool, lstate) {
	next := st
	switch in.Op {
	case "acquire":
		return acquirable(st, in), lstate{Exists: true, Rev: in.Rev, Fence: nextFence(st, in), LU: in.LUMs, Exp: in.ExpMs,
			PrevRev: st.Rev, PrevResult: st.Result,
			Failures: st.Failures, NotBefore: st.NotBefore, RecentTill: st.RecentTill, Reason: st.Reason}
	case "renew": // the first write: extends the lease, never shortens it
		next.Beat++
		next.LU = in.LUMs
		return st.Exists && st.Rev == in.Rev && !st.Rel && st.LU <= in.LUMs, next
	case "renew-beat": // the second write, when the stored lease ends later
		next.Beat++
		return st.Exists && st.Rev == in.Rev && !st.Rel, next
	case "release", "op-release", "release-unguarded":
		// A holder's release matches only an item its revision has not
		// released: the retry of an applied release is refused (the store
		// recognises it), so it never moves RelAt. An operator's
		// force-release, a failure at the revision the operator saw with
		// the episode's failures, no not-before, not recent, also matches
		// the holder's failure release, but not the operator's (its own
		// retry). The broken holder's unguarded write (VariantStubborn)
		// matches any release of its revision with its result.
		next.Rel, next.Result, next.RelAt, next.ResFence = true, in.Result, in.NowMs, st.Fence
		if !in.KeepEpisode {
			next.Failures, next.NotBefore, next.RecentTill, next.Reason = in.Failures, in.NotBefore, in.RecentTill, in.Reason
		}
		again := false
		switch in.Op {
		case "op-release":
			again = st.Result == in.Result && st.Reason != storeapi.OperatorReleaseReason
		case "release-unguarded":
			again = st.Result == in.Result
		}
		return st.Exists && st.Rev == in.Rev && (!st.Rel || again), next
	}
	return false, st
}

// acquirable is Acquire's condition: absent, or open by one branch, not
// held back by either guard, and not already at the request's revision
// (guard D: a revision is acquired at most once, so a late copy of an
// applied acquire cannot take the item again after a release, nor after
// the next holder's acquisition).
func acquirable(st lstate, in Intent) bool {
	if !st.Exists {
		return true
	}
	if st.Rev == in.Rev || st.PrevRev == in.Rev {
		return false
	}
	limit := in.NowMs - in.EpsMs
	open := st.Rel || (in.Wall && (st.Exp < limit || st.LU < limit)) ||
		(in.Obs && st.Rev == in.ObsRev && st.Beat == in.ObsBeat)
	fresh := in.FreshSince != 0 && st.Rel && st.Result == string(lockcore.Success) && st.RelAt >= in.FreshSince
	heldBack := in.MaxAtt > 0 && st.Rel && st.Result == string(lockcore.Failure) && st.RecentTill > in.NowMs &&
		st.NotBefore > in.NowMs
	return open && !fresh && !heldBack
}

func nextFence(st lstate, in Intent) int64 {
	if st.Exists {
		return st.Fence + 1
	}
	return in.FenceBase + 1
}

func sameView(v *View, st lstate) bool {
	return st.Exists && *v == View{Rev: st.Rev, Fence: st.Fence, Beat: st.Beat, Rel: st.Rel, Result: st.Result, RelAt: st.RelAt,
		ResFence: st.ResFence, LU: st.LU, Exp: st.Exp, PrevRev: st.PrevRev, PrevResult: st.PrevResult,
		Failures: st.Failures, NotBefore: st.NotBefore, RecentTill: st.RecentTill, Reason: st.Reason}
}

// lockModel is the porcupine model of one lock item.
var lockModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{lstate{}} },
	Step: func(s, i, o any) []any {
		st, in, out := s.(lstate), i.(Intent), o.(lout)
		if in.Op == "get" {
			switch {
			case !out.ok():
				return []any{st}
			case out.Item == nil && !st.Exists, out.Item != nil && sameView(out.Item, st):
				return []any{st}
			}
			return nil
		}
		cond, next := apply(st, in)
		switch {
		case out.unknown():
			if cond {
				return []any{st, next}
			}
			return []any{st}
		case out.ok():
			if !cond || (out.Item != nil && !sameView(out.Item, next)) {
				return nil
			}
			return []any{next}
		case out.refused():
			if cond {
				return nil
			}
			return []any{st}
		default: // any other 4xx: rejected before evaluation
			return []any{st}
		}
	},
	Hash: func(s any) uint64 {
		st := s.(lstate)
		h := fnv.New64a()
		fmt.Fprintf(h, "%+v", st)
		return h.Sum64()
	},
	DescribeOperation: func(i, o any) string {
		in, out := i.(Intent), o.(lout)
		return fmt.Sprintf("%s(%s) -> %d %s %+v", in.Op, short(in.Rev), out.Status, out.ErrType, out.Item)
	},
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// LinResult is the outcome of check 5.
type LinResult struct {
	Checked   bool     // false when the variant sends no intents
	Keys      int      // keys checked
	Ops       int      // operations checked
	Illegal   []string // keys whose history is not linearizable
	Unknown   []string // keys the checker could not decide in time: inconclusive
	Elapsed   time.Duration
	FirstBad  string // description of the first illegal key's operations near the failure
	Truncated bool
}

// checkLinearizable runs porcupine on the store-level history, per key,
// within budget in all: a first pass gives each key an equal share of
// what is left (at least a second), a second pass gives the undecided
// keys the rest.
func checkLinearizable(ops []StoreOp, budget time.Duration) LinResult {
	start := time.Now()
	// A request the server did not answer (the proxy gave up after its
	// timeout) may still be applied later, however much later a stalled
	// server gets to it: it returns at the end of the history.
	var end int64
	for _, op := range ops {
		end = max(end, op.Return+1)
	}
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		if op.Intent == nil {
			continue
		}
		in := *op.Intent
		ret := op.Return
		if op.Status == 0 {
			ret = end
		}
		byKey[in.Key] = append(byKey[in.Key], porcupine.Operation{ClientId: op.Worker, Input: in, Call: op.Call,
			Output: lout{Status: op.Status, ErrType: op.ErrType, Item: op.Item}, Return: ret})
	}
	res := LinResult{Checked: len(byKey) > 0, Keys: len(byKey)}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	model := lockModel.ToModel()
	for i, k := range keys {
		h := byKey[k]
		res.Ops += len(h)
		left := budget - time.Since(start)
		per := left / time.Duration(len(keys)-i)
		if per < time.Second {
			per = time.Second
		}
		r, info := porcupine.CheckOperationsVerbose(model, h, per)
		switch r {
		case porcupine.Illegal:
			res.Illegal = append(res.Illegal, k)
			if res.FirstBad == "" {
				res.FirstBad = describeIllegal(k, info)
			}
		case porcupine.Unknown:
			res.Unknown = append(res.Unknown, k)
		}
	}
	// The keys the first pass could not decide share what is left of the
	// budget: most keys take far less than their share.
	undecided := res.Unknown
	res.Unknown = nil
	for i, k := range undecided {
		per := (budget - time.Since(start)) / time.Duration(len(undecided)-i)
		if per <= 0 {
			res.Unknown = append(res.Unknown, undecided[i:]...)
			break
		}
		r, info := porcupine.CheckOperationsVerbose(model, byKey[k], per)
		switch r {
		case porcupine.Illegal:
			res.Illegal = append(res.Illegal, k)
			if res.FirstBad == "" {
				res.FirstBad = describeIllegal(k, info)
			}
		case porcupine.Unknown:
			res.Unknown = append(res.Unknown, k)
		}
	}
	sort.Strings(res.Illegal)
	res.Elapsed = time.Since(start)
	return res
}

// describeIllegal names the operations just after the longest
// linearizable prefix.
func describeIllegal(key string, info porcupine.LinearizationInfo) string {
	partials := info.PartialLinearizationsOperations()
	best := -1
	var bestOps []porcupine.Operation
	for _, part := range partials {
		for _, lin := range part {
			if len(lin) > best {
				best, bestOps = len(lin), lin
			}
		}
	}
	s := fmt.Sprintf("key %s: longest linearizable prefix has %d operations", key, best)
	if n := len(bestOps); n > 0 {
		last := bestOps[n-1]
		s += "; last: " + lockModel.DescribeOperation(last.Input, last.Output)
	}
	return s
}
