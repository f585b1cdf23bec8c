package chaos

import "strings"

// CheckIdempotency is check 15, on the storm's idempotent operations.
const CheckIdempotency Check = "15 one completion per operation, no replay to another payload"

// IdemReport counts the idempotent deliveries check 15 judged.
type IdemReport struct {
	Runs       int // runs of the handler (failed ones too)
	Calls      int // deliveries
	Answered   int // of those, answered: by their own run or a replay
	Replays    int // of the answered, replays
	Mismatched int // deliveries refused with idempotency.ErrPayloadMismatch
}

// isIdemKey reports whether store key k is an idempotency record's.
func isIdemKey(k string) bool { return strings.HasPrefix(k, idemGroup+"/") }

// mismatchText is what a delivery's error says when its payload did not
// match the record's (idempotency.ErrPayloadMismatch).
const mismatchText = "key reused with another payload"

// checkIdempotency is check 15: what each delivery of an idempotent
// operation got. Every answered delivery of one record got the answer of
// one and the same run (never two completions of one operation: the
// retention outlasts the run), a run of that record that succeeded, for
// the delivery's own payload (never a replay to a mismatched payload).
func (a *analysis) checkIdempotency() {
	r := &a.rep.Idem
	runs := map[string]Event{}
	for _, e := range a.rec.events {
		if e.Kind == EvIdemRun {
			runs[e.Run] = e
			r.Runs++
		}
	}
	first := map[string]Event{} // per record: the first answered delivery
	for _, e := range a.rec.events {
		if e.Kind != EvIdemCall {
			continue
		}
		r.Calls++
		if e.Outcome == "error" {
			if strings.Contains(e.Err, mismatchText) {
				r.Mismatched++
			}
			continue
		}
		r.Answered++
		if e.Outcome == "replay" {
			r.Replays++
		}
		run, ok := runs[e.Run]
		switch {
		case !ok || run.Key != e.Key || run.Outcome == "failed" || run.Payload != e.AnsPayload:
			a.violate(CheckIdempotency, "w%d: a delivery on %s got the answer of run %q for payload %q, which no successful run of that record produced",
				e.Worker, e.Key, e.Run, e.AnsPayload)
		case e.AnsPayload != e.Payload:
			a.violate(CheckIdempotency, "w%d: a delivery on %s with payload %q got run %s's answer (%s) for payload %q: a replay to a mismatched payload",
				e.Worker, e.Key, e.Payload, e.Run, e.Outcome, e.AnsPayload)
		}
		f, ok := first[e.Key]
		if !ok {
			first[e.Key] = e
			continue
		}
		if f.Run != e.Run {
			a.violate(CheckIdempotency, "%s: two completions of one operation: w%d got run %s's answer, w%d run %s's",
				e.Key, f.Worker, f.Run, e.Worker, e.Run)
		}
	}
}
