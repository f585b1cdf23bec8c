package chaos

// checkPublished is check 8: a RELEASED result was published on the lock
// item. Every wait that returned RELEASED with fence f on key k (from the
// lock item or from a release announcement, see storeapi.Announcer) must
// have a store response on the lock item of k itself, to a request sent
// before the wait returned, that shows the item released with success at
// result fence f. A response of an announcement item does not count: an
// announcement that showed a success the lock item never published would
// fail here.
func (a *analysis) checkPublished() {
	type pub struct {
		key   string
		fence int64
	}
	first := map[pub]int64{} // the earliest call of a request whose response showed it
	for _, op := range a.rec.ops {
		it := op.Item
		if it == nil || !it.Rel || it.Result != "success" || it.ResFence == 0 {
			continue
		}
		p := pub{op.Key, it.ResFence}
		if t, ok := first[p]; !ok || op.Call < t {
			first[p] = op.Call
		}
	}
	for _, e := range a.rec.events {
		if e.Kind != EvWait || e.Outcome != "RELEASED" {
			continue
		}
		if t, ok := first[pub{e.Key, e.Fence}]; !ok || t > e.T2 {
			a.violate(CheckPublished, "w%d: RELEASED on %s with fence %d, which no response of the lock item showed published before the wait returned",
				e.Worker, e.Key, e.Fence)
		}
	}
}
