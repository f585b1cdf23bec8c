package chaos

import (
	"net/http"
	"sort"
)

// checkOperator is check 7: no operator release is overwritten. After an
// operator's force-release of revision R was applied, every item the store
// shows later (in the answer to any request sent after the force-release
// returned) that still carries R must show that release: released with
// failure, reason operator_release, at the operator's time. A holder that
// publishes its own failure over it (reason, attempt count, not-before)
// reopens the episode the operator closed. A write at R other than the
// operator's own that the store applied (answered 200) although it was
// sent after the force-release returned is such an overwrite too, read
// back or not: every write of lockcore at R is conditioned so that it
// cannot apply over the operator's release (renewals on an unreleased
// item, releases that keep an operator's, acquires on another revision).
func (a *analysis) checkOperator() {
	relAt := map[string]map[int64]bool{} // revision -> times of the operator's applied releases
	for _, op := range a.rec.ops {
		if in := op.Intent; in != nil && in.Op == "op-release" && op.Status == http.StatusOK {
			if relAt[in.Rev] == nil {
				relAt[in.Rev] = map[int64]bool{}
			}
			relAt[in.Rev][in.NowMs] = true
		}
	}
	revs := make([]string, 0, len(a.forced))
	for rev := range a.forced {
		revs = append(revs, rev)
	}
	sort.Strings(revs)
	for _, rev := range revs {
		f := a.forced[rev]
		for _, op := range a.rec.ops {
			if in := op.Intent; in != nil && in.Rev == rev && in.Op != "op-release" && in.Op != "get" &&
				op.Status == http.StatusOK && op.Call > f.Return {
				a.violate(CheckOperator, "key %s: the operator's release of revision %s (+%v) overwritten: w%d's %s of that revision, sent after it, was applied",
					f.Intent.Key, short(rev), a.since(f.Call), op.Worker, in.Op)
				break
			}
			it := op.Item
			if it == nil || it.Rev != rev || op.Call <= f.Return {
				continue
			}
			if it.Rel && it.Result == "failure" && it.Reason == operatorReason && relAt[rev][it.RelAt] {
				continue
			}
			a.violate(CheckOperator, "key %s: the operator's release of revision %s (fence %d, +%v) overwritten: w%d's %s read it released=%v result %q reason %q failures %d not-before %d",
				f.Intent.Key, short(rev), it.Fence, a.since(f.Call), op.Worker, op.Target, it.Rel, it.Result, it.Reason, it.Failures, it.NotBefore)
			break
		}
	}
}
