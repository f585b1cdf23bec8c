package chaos

import (
	"net/http"
	"testing"
)

// The contract checks' self-tests: each check runs on hand-built histories
// of one key in a storm phase (stormHistory), a history that keeps the
// contract and broken ones that do not, as a lock with that flaw would
// write them.

// op records worker w's request on key that reached the proxy at ms and
// was answered lat ms later (lat < 0: never answered), with status and
// the item of the answer.
func (h *stormHistory) op(w int, key, target string, in *Intent, ms, lat int64, status int, item *View) {
	o := StoreOp{Worker: w, Target: target, Key: key, Intent: in, Arrive: at(ms), Call: at(ms), Return: at(ms + max(lat, 0)),
		Status: status, Item: item}
	if lat >= 0 {
		o.Answer = at(ms + lat)
	} else {
		o.Lost = true
	}
	if status == http.StatusBadRequest {
		o.ErrType = ccf
	}
	h.rec.ops = append(h.rec.ops, o)
}

// poll records worker w's read of the lock item at ms, answered after lat
// ms, that showed item.
func (h *stormHistory) poll(w int, ms, lat int64, item View) {
	h.op(w, hKey, "GetItem", &Intent{Op: "get", Key: hKey}, ms, lat, http.StatusOK, &item)
}

// succeed records rev's applied Success release at ms.
func (h *stormHistory) succeed(w int, rev string, fence, ms int64) {
	h.rec.ops = append(h.rec.ops, StoreOp{Worker: w, Target: "UpdateItem", Key: hKey, Call: at(ms), Return: at(ms + 1), Answer: at(ms + 1),
		Status: http.StatusOK, Intent: &Intent{Op: "release", Key: hKey, Rev: rev, NowMs: wall(ms), Result: "success"},
		Item: &View{Rev: rev, Fence: fence, Rel: true, Result: "success", RelAt: wall(ms), ResFence: fence}})
}

// wait records worker w's wait on the key from ms to endMs.
func (h *stormHistory) wait(w int, ms, endMs int64, outcome, cause string, fence int64) {
	h.rec.events = append(h.rec.events, Event{T: at(ms), T2: at(endMs), Worker: w, Kind: EvWait, Key: hKey, Outcome: outcome, Cause: cause, Fence: fence})
}

// valid records the Valid() samples of rev's hold: true from ms to lastMs.
func (h *stormHistory) valid(w int, rev string, fence, ms, lastMs int64) {
	h.rec.events = append(h.rec.events, Event{T: at(ms), T2: at(lastMs), Until: at(lastMs + 10), Worker: w, Kind: EvValid, Key: hKey, Rev: rev, Fence: fence})
}

func (h *stormHistory) contract(t *testing.T, run func(*contract), c Check) int {
	t.Helper()
	rep := h.check(t, func(a *analysis) { run(newContract(a)) })
	t.Logf("%s: %v", c, rep.Details[c])
	return rep.Violations[c]
}

var (
	heldA     = View{Rev: "a", Fence: 1}
	releasedA = View{Rev: "a", Fence: 1, Rel: true, Result: "success", ResFence: 1}
)

func TestCheckReleasedFresh(t *testing.T) {
	tests := []struct {
		name    string
		waitMs  int64 // when the wait began; the success of fence 1 was published at 100 ms
		newerMs int64 // when fence 2 was granted (0: never)
		seen    bool  // the wait read fence 2 holding the lock
		// seenReleased: the wait read fence 2 released with its own
		// success.
		seenReleased bool
		// ownCopy: the wait read its own acquire write's copy holding
		// the lock as fence 2 (a late copy it frees).
		ownCopy bool
		// againMs is when a retry of fence 1's release published the
		// success again, writing a later release time (0: never).
		againMs int64
		want    int
	}{
		{"published while it waited", 50, 0, false, false, false, 0, 0},
		{"published within the clock allowance before it came", 300, 0, false, false, false, 0, 0},
		{"a newer holder granted before it came, never seen", 300, 200, false, false, false, 0, 0},
		{"its own late copy seen", 300, 0, false, false, true, 0, 0},
		// The flaws: a wait that takes an old success as its answer, or
		// one older than the holder it watched; a success whose age
		// counts from a retry of its release, which rewrote the release
		// time.
		{"an old success", 3000, 0, false, false, false, 0, 1},
		{"a newer holder seen, the older success returned", 300, 200, true, false, false, 0, 1},
		{"a newer success seen, the older one returned", 300, 200, false, true, false, 0, 1},
		{"an old success published again by a retried release", 3000, 0, false, false, false, 2900, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.succeed(0, "a", 1, 100)
			if tt.againMs > 0 {
				h.succeed(0, "a", 1, tt.againMs)
			}
			if tt.newerMs > 0 {
				h.grant(2, "b", 2, tt.newerMs)
			}
			if tt.seen {
				h.poll(1, tt.waitMs+10, 2, View{Rev: "b", Fence: 2})
			}
			if tt.ownCopy {
				h.op(1, hKey, "UpdateItem", &Intent{Op: "acquire", Key: hKey, Rev: "w1"}, tt.waitMs+5, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			}
			if tt.seenReleased {
				h.succeed(2, "b", 2, tt.waitMs+5)
				h.poll(1, tt.waitMs+10, 2, View{Rev: "b", Fence: 2, Rel: true, Result: "success", ResFence: 2})
			}
			h.wait(1, tt.waitMs, tt.waitMs+50, "RELEASED", "", 1)
			if got := h.contract(t, (*contract).releasedFresh, CheckReleasedFresh); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckToldTime(t *testing.T) {
	told := wall(6020) // the not-before of a's failure
	tests := []struct {
		name string
		back func(h *stormHistory)
		want int
	}{
		{"admitted at the time it was told", func(h *stormHistory) {
			h.poll(1, 6030, 2, View{Rev: "a", Fence: 1, Rel: true, Result: "failure", NotBefore: told})
			h.grant(1, "b", 2, 6040)
			h.rec.events[len(h.rec.events)-1].BackMs = told
		}, 0},
		{"refused by a newer holder's failure", func(h *stormHistory) {
			h.grant(2, "b", 2, 6025)
			h.fail(2, "b", 2, 6028, 1500, 3000, "upstream_429")
			h.poll(1, 6030, 2, View{Rev: "b", Fence: 2, Rel: true, Result: "failure", NotBefore: wall(9028)})
			h.rec.events = append(h.rec.events, Event{T: at(6030), T2: at(6040), Worker: 1, Kind: EvWait, Key: hKey, Outcome: "FAILED",
				Cause: causeHolderFailed, NotBeforeMs: wall(9028), BackMs: told})
		}, 0},
		// The flaws: a lock that names a time earlier than the one its
		// failure holds the key back to.
		{"refused again with the same not-before", func(h *stormHistory) {
			h.rec.events = append(h.rec.events, Event{T: at(6030), T2: at(6040), Worker: 1, Kind: EvWait, Key: hKey, Outcome: "FAILED",
				Cause: causeHolderFailed, NotBeforeMs: told, BackMs: told})
		}, 1},
		{"the failure holds it back past the time told", func(h *stormHistory) {
			h.poll(1, 6030, 2, View{Rev: "a", Fence: 1, Rel: true, Result: "failure", NotBefore: wall(9000)})
			h.rec.events = append(h.rec.events, Event{T: at(6030), T2: at(6040), Worker: 1, Kind: EvWait, Key: hKey, Outcome: "FAILED",
				Cause: causeHolderFailed, NotBeforeMs: wall(9000), BackMs: told})
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.fail(0, "a", 1, 20, 1500, 6000, "upstream_429")
			h.poll(1, 110, 2, View{Rev: "a", Fence: 1, Rel: true, Result: "failure", NotBefore: told})
			h.rec.events = append(h.rec.events, Event{T: at(100), T2: at(120), Worker: 1, Kind: EvWait, Key: hKey, Outcome: "FAILED",
				Cause: causeHolderFailed, NotBeforeMs: told})
			tt.back(h)
			if got := h.contract(t, (*contract).toldTime, CheckToldTime); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckTwoValid(t *testing.T) {
	renew := &Intent{Op: "renew", Key: hKey, Rev: "a"}
	tests := []struct {
		name     string
		forced   bool
		renewLat int64 // the old holder's renewal at 1300 ms is answered (refused) after this; -1 lost, 0 none sent
		firstMs  int64 // the old holder's first Valid() sample (its acquire's answer)
		lastMs   int64 // the old holder's last Valid() sample; the new one is Valid() from 1001 (or newFirstMs) to 3000 ms
		// newFirstMs is the new holder's first Valid() sample, 0: 1001 ms.
		newFirstMs int64
		// stallMs: the old holder's process got no CPU from 1320 ms to
		// this (0: never).
		stallMs int64
		want    int
	}{
		{"no overlap", false, 0, 1, 900, 0, 0, 0},
		{"force-released, the renewal refused, invalid at once", true, 10, 1, 1400, 0, 0, 0},
		{"force-released, the renewal lost", true, -1, 1, 2500, 0, 0, 0},
		{"its acquire answered after the new holder's hold", true, 0, 3100, 3500, 0, 0, 0},
		{"force-released, Valid() after the refused renewal in a stall", true, 10, 1, 2500, 0, 2400, 0},
		// The flaws: two holders without a force-release; a holder that
		// goes on after its refused renewal; a holder that stops renewing
		// (near its hard maximum) and never learns.
		{"overlap without a force-release", false, 0, 1, 1200, 0, 0, 1},
		{"force-released, Valid() after the refused renewal", true, 10, 1, 2500, 0, 0, 1},
		{"force-released, no renewal sent", true, 0, 1, 2500, 0, 0, 1},
		// A second holder Valid() before the force-release that it
		// acquired over.
		{"both Valid() before the force-release", true, 10, 1, 1400, 500, 0, 1},
		// A holder Valid() long after a short stall that followed its
		// refused renewal.
		{"force-released, Valid() long after a stall", true, 10, 1, 2500, 0, 1500, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.valid(0, "a", 1, tt.firstMs, tt.lastMs)
			if tt.forced {
				h.forceRelease("a", 1, 950)
			}
			if tt.stallMs > 0 {
				h.rec.events = append(h.rec.events, Event{T: at(1320), T2: at(tt.stallMs), Worker: 0, Kind: EvStall})
			}
			if tt.renewLat != 0 {
				h.op(0, hKey, "UpdateItem", renew, 1300, tt.renewLat, http.StatusBadRequest, &View{Rev: "a", Fence: 1, Rel: true})
			}
			newFirst := int64(1001)
			if tt.newFirstMs > 0 {
				newFirst = tt.newFirstMs
			}
			h.grant(1, "b", 2, newFirst-1)
			h.valid(1, "b", 2, newFirst, 3000)

			if got := h.contract(t, (*contract).twoValid, CheckTwoValid); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckForcedCause(t *testing.T) {
	tests := []struct {
		name   string
		cause  string // of the holder's context when Valid() turned false
		lastMs int64  // its last Valid() sample; force-released at 950 ms
		want   int
	}{
		{"the lease lost at its next renewal", "lease_lost", 1300, 0},
		{"the hard maximum right after the force-release", "max_hold", 1200, 0},
		// The flaw: a holder that stopped renewing near its hard maximum
		// never sees the force-release and is told ErrMaxHoldReached.
		{"the hard maximum long after the force-release", "max_hold", 2500, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.valid(0, "a", 1, 1, tt.lastMs)
			h.rec.events[len(h.rec.events)-1].Cause = tt.cause
			h.forceRelease("a", 1, 950)
			if got := h.contract(t, (*contract).twoValid, CheckTwoValid); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckServedWait(t *testing.T) {
	tests := []struct {
		name      string
		successMs int64 // 0: none
		newerMs   int64 // a newer grant (0: none)
		slowPoll  bool  // one poll answered after more than 4× the attempt timeout
		latency   int64 // of every other poll, ms
		want      int
	}{
		{"no success published", 0, 0, false, 600, 0},
		{"published too late for a slow store", 4000, 0, false, 600, 0},
		{"a poll answered too late to count", 1000, 0, true, 600, 0},
		{"another holder took the lock at once", 1000, 1010, false, 600, 0},
		// The flaws: polls answered in time but cut short (a brownout
		// slower than the attempt timeout), and the wait times out; a
		// wait that misses a success on a fast store.
		{"published early, answered in time", 1000, 0, false, 600, 1},
		{"published late, answered at once", 4000, 0, false, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			if tt.successMs > 0 {
				h.succeed(0, "a", 1, tt.successMs)
			}
			if tt.newerMs > 0 {
				h.grant(2, "b", 2, tt.newerMs)
			}
			for ms := int64(150); ms < 5000; ms += 700 {
				lat := tt.latency
				if tt.slowPoll && ms > 1000 && ms < 2000 {
					lat = 1700
				}
				h.poll(1, ms, lat, heldA)
			}
			h.wait(1, 100, 5100, "FAILED", causeWaitTimeout, 0)
			if got := h.contract(t, (*contract).servedWait, CheckServedWait); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckEarlyEnd(t *testing.T) {
	acquire := &Intent{Op: "acquire", Key: hKey, Rev: "w1"}
	tests := []struct {
		name  string
		end   func(h *stormHistory)
		reads func(h *stormHistory)
		want  int
	}{
		{"a success read at the fixed pace", func(h *stormHistory) { h.succeed(0, "a", 1, 300) }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 300, 2, heldA)
			h.poll(1, 500, 2, releasedA)
			h.wait(1, 50, 510, "RELEASED", "", 1)
		}, 0},
		{"a crash taken over at the fixed pace", func(h *stormHistory) {
			h.rec.faults = append(h.rec.faults, Fault{T: at(400), Worker: 0, Kind: FaultKill})
		}, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.op(1, hKey, "UpdateItem", acquire, 1900, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 1910, "ACQUIRED", "", 2)
		}, 0},
		{"reads given up before their answer (a brownout, check 12's)", func(h *stormHistory) { h.succeed(0, "a", 1, 300) }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 350, 600, releasedA)
			h.rec.ops[len(h.rec.ops)-1].Gone = true
			h.poll(1, 3000, 2, releasedA)
			h.wait(1, 50, 3010, "RELEASED", "", 1)
		}, 0},
		// Storm seed 13, key chaos/k2.p1.e2: the holder's renewal, sent
		// 100 ms before its kill, was held 1.3 s by the proxy and applied
		// after it; the beat it wrote renewed the lease, and the waiter
		// took over a lease after seeing it.
		{"a crash after a renewal the proxy held, taken over a lease after its beat", lateBeatCrash, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			for ms := int64(300); ms < 1600; ms += 200 {
				h.poll(1, ms, 2, heldA)
			}
			for ms := int64(1700); ms < 3500; ms += 200 {
				h.poll(1, ms, 2, View{Rev: "a", Fence: 1, Beat: 1})
			}
			h.op(1, hKey, "UpdateItem", acquire, 3500, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 3510, "ACQUIRED", "", 2)
		}, 0},
		{"a success read on the announcements", func(h *stormHistory) { h.succeed(0, "a", 1, 300) }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			for ms := int64(400); ms < 3000; ms += 300 {
				h.op(1, hKey+"#announce-1", "GetItem", nil, ms, 2, http.StatusOK, nil)
			}
			h.wait(1, 50, 3010, "RELEASED", "", 1)
		}, 0},
		{"a success read by a read sent at the pace that arrived late", func(h *stormHistory) { h.succeed(0, "a", 1, 300) }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 900, 2, releasedA) // sent at 500 ms, held up 400 ms on its way
			h.rec.ops[len(h.rec.ops)-1].Intent.Sent = at(500)
			h.wait(1, 50, 910, "RELEASED", "", 1)
		}, 0},
		{"a force-release read after a slow announcement", func(h *stormHistory) { h.forceRelease("a", 1, 300) }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.op(1, hKey+"#announce-1", "GetItem", nil, 350, 750, http.StatusOK, nil)
			h.poll(1, 1300, 2, View{Rev: "a", Fence: 1, Rel: true, Result: "failure"})
			h.op(1, hKey, "UpdateItem", acquire, 1305, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 1310, "ACQUIRED", "", 2)
		}, 0},
		// The flaws: a waiter asleep on a predicted schedule past an early
		// end; a crowded waiter that reads only announcements, which
		// carry no failure.
		{"a success slept through", func(h *stormHistory) { h.succeed(0, "a", 1, 300) }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 3000, 2, releasedA)
			h.wait(1, 50, 3010, "RELEASED", "", 1)
		}, 1},
		{"a failure slept through", func(h *stormHistory) { h.fail(0, "a", 1, 300, 1500, 0, "upstream_503") }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 3000, 2, View{Rev: "a", Fence: 1, Rel: true, Result: "failure"})
			h.op(1, hKey, "UpdateItem", acquire, 3005, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 3010, "ACQUIRED", "", 2)
		}, 1},
		{"a failure, the announcements read instead", func(h *stormHistory) { h.fail(0, "a", 1, 300, 1500, 0, "upstream_503") }, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			for ms := int64(400); ms < 3000; ms += 300 {
				h.op(1, hKey+"#announce-1", "GetItem", nil, ms, 2, http.StatusOK, nil)
			}
			h.poll(1, 3000, 2, View{Rev: "a", Fence: 1, Rel: true, Result: "failure"})
			h.op(1, hKey, "UpdateItem", acquire, 3005, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 3010, "ACQUIRED", "", 2)
		}, 1},
		{"a crash slept through", func(h *stormHistory) {
			h.rec.faults = append(h.rec.faults, Fault{T: at(400), Worker: 0, Kind: FaultKill})
		}, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 4900, 2, heldA)
			h.op(1, hKey, "UpdateItem", acquire, 5000, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 5010, "ACQUIRED", "", 2)
		}, 1},
		{"a crash after a renewal the proxy held, slept through", lateBeatCrash, func(h *stormHistory) {
			h.poll(1, 100, 2, heldA)
			h.poll(1, 1700, 2, View{Rev: "a", Fence: 1, Beat: 1})
			h.poll(1, 5900, 2, View{Rev: "a", Fence: 1, Beat: 1})
			h.op(1, hKey, "UpdateItem", acquire, 6000, 2, http.StatusOK, &View{Rev: "w1", Fence: 2})
			h.wait(1, 50, 6010, "ACQUIRED", "", 2)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			tt.end(h)
			tt.reads(h)
			if got := h.contract(t, (*contract).earlyEnd, CheckEarlyEnd); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}

// lateBeatCrash is a's holder (worker 0) renewing at 300 ms, the renewal
// held by the proxy and applied at 1600 ms (beat 1), and killed at
// 400 ms, between the two.
func lateBeatCrash(h *stormHistory) {
	h.rec.ops = append(h.rec.ops, StoreOp{Worker: 0, Target: "UpdateItem", Key: hKey, Arrive: at(300), Call: at(1600), Return: at(1601), Answer: at(1601),
		Gone: true, Status: http.StatusOK, Intent: &Intent{Op: "renew", Key: hKey, Rev: "a", NowMs: wall(300), LUMs: wall(1800), Sent: at(300)},
		Item: &View{Rev: "a", Fence: 1, Beat: 1, LU: wall(1800)}})
	h.rec.faults = append(h.rec.faults, Fault{T: at(400), Worker: 0, Kind: FaultKill})
}

func TestCheckNotApplied(t *testing.T) {
	denied := func(h *stormHistory) {
		h.rec.faults = append(h.rec.faults, Fault{T: at(100), Worker: 1, Kind: FaultAccessDenied, Detail: hKey + " UpdateItem"})
	}
	missing := func(h *stormHistory) {
		h.rec.ops = append(h.rec.ops, StoreOp{Worker: 1, Target: "UpdateItem", Key: hKey, Arrive: at(99), Call: at(99), Return: at(100), Answer: at(100),
			Status: http.StatusBadRequest, ErrType: "ResourceNotFoundException"})
	}
	announcement := func(h *stormHistory) {
		h.rec.faults = append(h.rec.faults, Fault{T: at(100), Worker: 1, Kind: FaultAccessDenied, Detail: hKey + "#announce-3 PutItem"})
	}
	tests := []struct {
		name   string
		answer func(h *stormHistory)
		kind   string
		endMs  int64
		want   int
	}{
		{"a wait that fails at once", denied, EvWait, 300, 0},
		{"a wait whose announcement was denied", announcement, EvWait, 5000, 0},
		{"a wait whose process was not scheduled", func(h *stormHistory) {
			denied(h)
			h.rec.events = append(h.rec.events, Event{T: at(200), T2: at(1500), Worker: 1, Kind: EvStall})
		}, EvWait, 2000, 0},
		{"a release that gives up at once", missing, EvRelease, 600, 0},
		{"a wait that settles its first write, which the proxy held", func(h *stormHistory) {
			h.rec.faults = append(h.rec.faults, Fault{T: at(20), Worker: 1, Kind: FaultDropBefore, Detail: "hang UpdateItem"})
			denied(h)
		}, EvWait, 2500, 0},
		{"a wait that settles the lost answer of its first write", func(h *stormHistory) {
			h.op(1, hKey, "UpdateItem", &Intent{Op: "acquire", Key: hKey, Rev: "w1"}, 20, -1, http.StatusOK, &View{Rev: "w1", Fence: 1})
			denied(h)
		}, EvWait, 2500, 0},
		{"an answer the wait had given up on", func(h *stormHistory) {
			missing(h)
			h.rec.ops[len(h.rec.ops)-1].Gone = true
		}, EvWait, 5000, 0},
		// The flaws: the not-applied write settled as an unknown outcome
		// until the deadline, or retried until the release's budget.
		{"a wait that settles until its deadline", denied, EvWait, 5000, 1},
		{"a wait on a missing table", missing, EvWait, 5000, 1},
		{"a release that retries", denied, EvRelease, 3000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			tt.answer(h)
			h.rec.events = append(h.rec.events, Event{T: at(0), T2: at(tt.endMs), Worker: 1, Kind: tt.kind, Key: hKey, Outcome: "FAILED"})
			if got := h.contract(t, (*contract).notApplied, CheckNotApplied); got != tt.want {
				t.Errorf("violations = %d, want %d", got, tt.want)
			}
		})
	}
}
