package chaos

import (
	"net/http"
	"testing"
	"time"
)

// stormHistory builds the records of one key for checks 6 and 7 by hand:
// a storm phase from t=0 for a minute, true time in milliseconds, and the
// host's wall clock equal to true time.
type stormHistory struct {
	rec *recorder
	cfg Config
}

const (
	msNs    = int64(time.Millisecond)
	hKey    = "chaos/k0"
	hOrigin = 1_000_000 * msNs // true time of the phase's start
)

func newStormHistory() *stormHistory {
	cfg := CIConfig(1)
	cfg.Phases = []Phase{{Kind: Storm, Dur: time.Minute, Start: hOrigin, End: hOrigin + int64(time.Minute)}}
	return &stormHistory{rec: &recorder{}, cfg: cfg}
}

// at returns true time ms milliseconds into the phase, and wall is the
// same instant in Unix milliseconds (wallBase 0).
func at(ms int64) int64   { return hOrigin + ms*msNs }
func wall(ms int64) int64 { return at(ms) / msNs }

// grant records worker w's applied acquire of rev with fence at ms.
func (h *stormHistory) grant(w int, rev string, fence, ms int64) {
	h.rec.ops = append(h.rec.ops, StoreOp{Worker: w, Target: "UpdateItem", Key: hKey, Call: at(ms), Return: at(ms + 1), Status: http.StatusOK,
		Intent: &Intent{Op: "acquire", Key: hKey, Rev: rev}, Item: &View{Rev: rev, Fence: fence}})
	h.rec.events = append(h.rec.events, Event{T: at(ms), T2: at(ms + 1), Worker: w, Kind: EvWait, Key: hKey, Outcome: "ACQUIRED", Rev: rev, Fence: fence})
}

// fetch records rev's upstream call at ms with status and Retry-After.
func (h *stormHistory) fetch(w int, rev string, ms int64, status int, retryAfter time.Duration) {
	h.rec.fetches = append(h.rec.fetches, Fetch{T: at(ms), Worker: w, Key: hKey, Rev: rev, Status: status, RetryAfter: retryAfter})
}

// fail records rev's applied Failure release at ms, recent for window ms,
// with a not-before nb ms after the release (none when 0).
func (h *stormHistory) fail(w int, rev string, fence, ms, window, nb int64, reason string) {
	in := &Intent{Op: "release", Key: hKey, Rev: rev, NowMs: wall(ms), Result: "failure", Failures: 1, Reason: reason,
		RecentTill: wall(ms + nb + window)}
	if nb > 0 {
		in.NotBefore = wall(ms + nb)
	}
	h.rec.ops = append(h.rec.ops, StoreOp{Worker: w, Target: "UpdateItem", Key: hKey, Call: at(ms), Return: at(ms + 1), Status: http.StatusOK, Intent: in,
		Item: &View{Rev: rev, Fence: fence, Rel: true, Result: "failure", RelAt: in.NowMs, Reason: reason, NotBefore: in.NotBefore, RecentTill: in.RecentTill}})
}

// forceRelease records the operator's applied release of rev at ms.
func (h *stormHistory) forceRelease(rev string, fence, ms int64) {
	in := &Intent{Op: "op-release", Key: hKey, Rev: rev, NowMs: wall(ms), Result: "failure", Reason: operatorReason}
	h.rec.ops = append(h.rec.ops, StoreOp{Worker: 99, Target: "UpdateItem", Key: hKey, Call: at(ms), Return: at(ms + 1), Status: http.StatusOK, Intent: in,
		Item: &View{Rev: rev, Fence: fence, Rel: true, Result: "failure", RelAt: in.NowMs, Reason: operatorReason}})
}

// unguarded records worker w's failure release of rev at ms, answered
// with status and no item, as an UpdateItem without ReturnValues is.
func (h *stormHistory) unguarded(w int, rev string, ms int64, status int) {
	in := &Intent{Op: "release-unguarded", Key: hKey, Rev: rev, NowMs: wall(ms), Result: "failure", Failures: 1, Reason: "lease_lost"}
	op := StoreOp{Worker: w, Target: "UpdateItem", Key: hKey, Call: at(ms), Return: at(ms + 1), Status: status, Intent: in}
	if status != http.StatusOK {
		op.ErrType = ccf
	}
	h.rec.ops = append(h.rec.ops, op)
}

// read records worker w's GetItem at ms that saw item.
func (h *stormHistory) read(w int, ms int64, item View) {
	h.rec.ops = append(h.rec.ops, StoreOp{Worker: w, Target: "GetItem", Key: hKey, Call: at(ms), Return: at(ms + 1), Status: http.StatusOK,
		Intent: &Intent{Op: "get", Key: hKey}, Item: &item})
}

func (h *stormHistory) check(t *testing.T, run func(*analysis)) *Report {
	t.Helper()
	rep := newReport(&h.cfg)
	a := &analysis{cfg: &h.cfg, rec: h.rec, grants: map[string][]*grant{}, renews: map[string][]int64{}, rels: map[string][]int64{},
		forced: map[string]StoreOp{}, rep: rep, maxShow: 5}
	a.index()
	run(a)
	return rep
}

func TestCheckEpisodesBudget(t *testing.T) {
	tests := []struct {
		name   string
		nbs    []int64 // per failing holder, one after the other: the hold-back it publishes, ms (0: none)
		window int64   // ms each failure stays recent after its not-before
		want   int
	}{
		{"two attempts of one episode", []int64{0, 0}, 1500, 0},
		{"three attempts of one episode", []int64{0, 0, 0}, 1500, 1},
		{"three attempts, the failures no longer recent", []int64{0, 0, 0}, 10, 0},
		{"two attempts, a hold-back, two more", []int64{0, 500, 0, 500}, 1500, 0},
		{"two attempts, a hold-back, three more", []int64{0, 500, 0, 0, 0}, 1500, 1},
		{"a hold-back too late", []int64{0, 0, 500}, 1500, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			ms := int64(0)
			for i, nb := range tt.nbs {
				rev := string(rune('a' + i))
				h.grant(i, rev, int64(i+1), ms)
				h.fetch(i, rev, ms+10, http.StatusServiceUnavailable, 0)
				h.fail(i, rev, int64(i+1), ms+20, tt.window, nb, "upstream_503")
				ms += 100 + nb
			}
			rep := h.check(t, (*analysis).checkEpisodes)
			if got := rep.Violations[CheckEpisode]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckEpisode])
			}
		})
	}
}

func TestCheckEpisodesHoldBack(t *testing.T) {
	tests := []struct {
		name   string
		nextMs int64 // when the next holder calls the upstream; the hold-back ends at 2110 ms
		want   int
	}{
		{"after the hold-back", 2200, 0},
		{"well before the hold-back", 1000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.fetch(0, "a", 10, http.StatusServiceUnavailable, 0)
			h.fail(0, "a", 1, 20, 1500, 0, "upstream_503")
			h.grant(1, "b", 2, 100)
			h.fetch(1, "b", 100, http.StatusServiceUnavailable, 0)
			h.fail(1, "b", 2, 110, 1500, 2000, "upstream_503")
			h.grant(2, "c", 3, tt.nextMs-10)
			h.fetch(2, "c", tt.nextMs, http.StatusOK, 0)
			rep := h.check(t, (*analysis).checkEpisodes)
			if got := rep.Violations[CheckEpisode]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckEpisode])
			}
		})
	}
}

func TestCheckEpisodesNotBefore(t *testing.T) {
	tests := []struct {
		name    string
		nextMs  int64 // when the next holder calls the upstream; the not-before is at 1010 ms
		cleared bool  // an operator release between
		want    int
	}{
		{"after the not-before", 1100, false, 0},
		{"well before the not-before", 300, false, 1},
		{"before the not-before, cleared by the operator", 300, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.fetch(0, "a", 10, http.StatusTooManyRequests, time.Second)
			h.fail(0, "a", 1, 20, 1500, 1000, "upstream_429")
			if tt.cleared {
				h.forceRelease("a", 1, 100)
			}
			h.grant(1, "b", 2, tt.nextMs-10)
			h.fetch(1, "b", tt.nextMs, http.StatusOK, 0)
			rep := h.check(t, (*analysis).checkEpisodes)
			if got := rep.Violations[CheckEpisode]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckEpisode])
			}
		})
	}
}

// TestCheckEpisodesRetryAfterNotPublished: a holder whose lock ended the
// hold by itself (its lease ran out while its acquire's answer was late)
// calls the upstream, is told 429 with Retry-After 6 s, and releases; but
// the applied failure release is the lock's own, reason lease_lost, with
// the hold-back of the exhausted episode (1.5 s), and the holder's
// Release publishes nothing ("the lock ended before release"). The next
// holder is bound by the published hold-back, not by the Retry-After that
// never reached the item (storm seed 13, key chaos/k1.p1.e0).
func TestCheckEpisodesRetryAfterNotPublished(t *testing.T) {
	tests := []struct {
		name   string
		reason string // of the applied failure release of a
		nextMs int64  // when the next holder calls the upstream; the hold-back ends at 1520 ms, the Retry-After at 6010 ms
		want   int
	}{
		{"the lock's own release, after its hold-back", "lease_lost", 1600, 0},
		{"the lock's own release, well before its hold-back", "lease_lost", 600, 1},
		{"the holder's own release, before its Retry-After", "upstream_429", 1600, 1},
		{"the holder's own release, after its Retry-After", "upstream_429", 6100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.fetch(0, "a", 10, http.StatusTooManyRequests, 6*time.Second)
			nb := int64(1500)
			if tt.reason == "upstream_429" {
				nb = 5990 // the holder's clock at its release plus the Retry-After
			}
			h.fail(0, "a", 1, 20, 1500, nb, tt.reason)
			h.grant(1, "b", 2, tt.nextMs-10)
			h.fetch(1, "b", tt.nextMs, http.StatusOK, 0)
			rep := h.check(t, (*analysis).checkEpisodes)
			if got := rep.Violations[CheckEpisode]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckEpisode])
			}
		})
	}
}

func TestCheckOperator(t *testing.T) {
	forced := View{Rev: "a", Fence: 1, Rel: true, Result: "failure", RelAt: wall(100), Reason: operatorReason}
	overwritten := forced
	overwritten.Reason, overwritten.RelAt = "lease_lost", wall(300)
	tests := []struct {
		name  string
		after func(h *stormHistory)
		want  int
	}{
		{"read back as released", func(h *stormHistory) { h.read(2, 200, forced) }, 0},
		{"the holder's failure over it", func(h *stormHistory) { h.fail(0, "a", 1, 300, 1500, 0, "lease_lost") }, 1},
		{"read back overwritten", func(h *stormHistory) { h.read(2, 400, overwritten) }, 1},
		{"the next holder acquires", func(h *stormHistory) { h.grant(1, "b", 2, 200) }, 0},
		// A late copy of a's acquire, applied after the force-release
		// (what lockcore's guard D refuses), shows a held by nobody.
		{"a late copy re-acquires", func(h *stormHistory) { h.grant(0, "a", 2, 300) }, 1},
		// A write applied without returning the item (no ReturnValues),
		// and never read back before the next holder: the write itself
		// shows it. A refused one does not.
		{"an applied write, never read back", func(h *stormHistory) { h.unguarded(0, "a", 300, http.StatusOK) }, 1},
		{"a refused write", func(h *stormHistory) { h.unguarded(0, "a", 300, http.StatusBadRequest) }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			h.forceRelease("a", 1, 100)
			tt.after(h)
			rep := h.check(t, (*analysis).checkOperator)
			if got := rep.Violations[CheckOperator]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckOperator])
			}
		})
	}
}

// TestLinearizableLateApply: a request the proxy gave up on (no answer)
// that the stalled server applies after the proxy's timeout, as reads show,
// is legal.
func TestLinearizableLateApply(t *testing.T) {
	acquire := &Intent{Op: "acquire", Key: hKey, Rev: "a", NowMs: 1, LUMs: 100, ExpMs: 200, FenceBase: 10}
	ops := []StoreOp{
		{Worker: 0, Key: hKey, Intent: acquire, Call: at(0), Return: at(10), Status: 0, ErrType: "transport: timeout"},
		{Worker: 1, Key: hKey, Intent: &Intent{Op: "get", Key: hKey}, Call: at(20), Return: at(21), Status: http.StatusOK},
		{Worker: 1, Key: hKey, Intent: &Intent{Op: "get", Key: hKey}, Call: at(30), Return: at(31), Status: http.StatusOK,
			Item: &View{Rev: "a", Fence: 11, LU: 100, Exp: 200}},
	}
	if res := checkLinearizable(ops, 10*time.Second); len(res.Illegal) > 0 || len(res.Unknown) > 0 {
		t.Errorf("checkLinearizable() = illegal %v, unknown %v; want linearizable", res.Illegal, res.Unknown)
	}
}

// TestCheckPublished: a RELEASED result needs a response of the lock item
// itself showing that success published, to a request sent before the wait
// returned; an announcement item's response does not count.
func TestCheckPublished(t *testing.T) {
	published := View{Rev: "a", Fence: 1, Rel: true, Result: "success", RelAt: wall(100), ResFence: 1}
	tests := []struct {
		name  string
		setup func(h *stormHistory)
		want  int
	}{
		{"read on the lock item", func(h *stormHistory) { h.read(2, 150, published) }, 0},
		{"the holder's release", func(h *stormHistory) {
			h.rec.ops = append(h.rec.ops, StoreOp{Worker: 0, Target: "UpdateItem", Key: hKey, Call: at(100), Return: at(101), Status: http.StatusOK,
				Intent: &Intent{Op: "release", Key: hKey, Rev: "a", Result: "success"}, Item: &published})
		}, 0},
		{"only an announcement showed it", func(h *stormHistory) {
			h.rec.ops = append(h.rec.ops, StoreOp{Worker: 2, Target: "GetItem", Key: hKey + "#announce-3", Call: at(150), Return: at(151),
				Status: http.StatusOK, Item: &published})
		}, 1},
		{"published after the wait returned", func(h *stormHistory) { h.read(2, 250, published) }, 1},
		{"another fence published", func(h *stormHistory) {
			other := published
			other.ResFence = 2
			h.read(2, 150, other)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			h.grant(0, "a", 1, 0)
			tt.setup(h)
			h.rec.events = append(h.rec.events, Event{T: at(50), T2: at(200), Worker: 1, Kind: EvWait, Key: hKey, Outcome: "RELEASED", Fence: 1})
			rep := h.check(t, (*analysis).checkPublished)
			if got := rep.Violations[CheckPublished]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckPublished])
			}
		})
	}
}
