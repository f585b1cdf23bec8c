package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// idemGroup is the partition of the idempotency records, apart from the
// harness's locks: checks 1 to 8 and the contract checks judge the locks
// the workers call themselves; check 15 judges these records by what
// their callers got (check 5 judges both in the store's history).
const idemGroup = "chaos-idem"

// idemPrefix is the records' key prefix (idempotency.Keys.Prefix).
const idemPrefix = "op"

// idemKey is the store key of operation op's record.
func idemKey(op string) string {
	return storeapi.PartitionKey(lockcore.Key{Group: idemGroup, ID: idemPrefix + "#" + op})
}

// idemEvent is one delivery of an idempotent operation: its key and its
// payload. Duplicates of one operation carry the same payload; a
// mismatched delivery reuses the key with another.
type idemEvent struct {
	Op      string `json:"op"`
	Payload string `json:"payload"`
}

// idemAnswer is what a run of the operation answers: the payload it ran
// for and the run's name, so that each caller's answer says which run
// produced it.
type idemAnswer struct {
	Payload string `json:"payload"`
	Run     string `json:"run"`
	replay  bool   // set by OnReplay: the answer is another delivery's
}

// Worker events of the idempotent operations (check 15).
const (
	// EvIdemRun is a run of an operation's handler: Key the record's
	// store key, Run the run's name, Payload what it ran for, Fence its
	// hold's fence; Outcome "failed" when it returned an error.
	EvIdemRun = "idem-run"
	// EvIdemCall is a delivery's answer: T to T2 the call, Payload the
	// delivery's, and on success Run and AnsPayload the answer's, Outcome
	// "replay" or "ran"; on an error Err and Outcome "error".
	EvIdemCall = "idem-call"
)

// idemFailP is the probability that a run fails (its error is not kept:
// the next delivery runs the handler again).
const idemFailP = 0.1

// newIdemOp builds the worker's idempotent operation over its store, with
// its lock settings and clock; VariantNoFingerprint fingerprints the
// operation's name instead of its payload, as a layer that validates no
// payload does.
func (w *worker) newIdemOp() (func(context.Context, idemEvent) (idemAnswer, error), error) {
	s := w.spec
	var runs atomic.Int64
	hs := idempotency.Handlers[idemEvent, idemAnswer]{
		Handle: func(ctx context.Context, e idemEvent) (idemAnswer, error) {
			info, _ := idempotency.FromContext(ctx)
			run := "w" + strconv.Itoa(s.Slot) + "." + strconv.Itoa(s.Inc) + "." + strconv.FormatInt(runs.Add(1), 10)
			failed := w.rng.Float64() < idemFailP
			ev := Event{T: Mono(), Kind: EvIdemRun, Key: idemKey(e.Op), Run: run, Payload: e.Payload, Fence: info.Fence}
			if failed {
				ev.Outcome = "failed"
			}
			w.emit(ev)
			// The work; a handler that finishes it even when its hold
			// ended (a lost lease), as careless ones do.
			sleepCtx(ctx, w.workTime())
			if failed {
				return idemAnswer{}, errors.New("chaos: the operation failed")
			}
			return idemAnswer{Payload: e.Payload, Run: run}, nil
		},
		Key:     func(_ context.Context, e idemEvent) (string, error) { return e.Op, nil },
		Payload: func(e idemEvent) any { return e.Payload },
		OnReplay: func(_ context.Context, _ idemEvent, a idemAnswer) (idemAnswer, error) {
			a.replay = true
			return a, nil
		},
	}
	if s.Variant == VariantNoFingerprint {
		hs.Payload = func(e idemEvent) any { return e.Op }
	}
	return idempotency.New(hs, w.store, idempotency.WithKeys(idempotency.Keys{Prefix: idemPrefix}),
		idempotency.WithLockmwOptions(lockmw.WithLockGroup(idemGroup), lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}), lockmw.WithTelemetry(lockmw.Telemetry{Logger: w.log, EMFWriter: io.Discard}),
			lockmw.WithSafetyMargin(s.Lease/2),
			lockmw.WithLockOptions(lockcore.WithLease(s.Lease), lockcore.WithPollInterval(s.Poll), lockcore.WithMaxWait(s.MaxWait),
				lockcore.WithClocks(lockcore.Clocks{Wall: w.clock, Allowance: s.ClockAllowance, Drift: s.Drift}),
				lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: s.MaxAttempts}),
				lockcore.WithStoreCalls(lockcore.StoreCalls{AttemptTimeout: s.AttemptTimeout}), lockcore.WithLogger(w.log))))
}

// idemCycle is one delivery of an idempotent operation in storm phase
// phase: an operation drawn as the contended keys are (so that the
// workers deliver it at the same time, as SQS redelivers and clients
// retry), with its own payload, or, with IdemMismatchP, another under
// the same key. Until a mismatched delivery of the worker's has been
// refused, an answered delivery is followed at once by one with another
// payload under its key, whose record then exists: left to the draws, a
// short storm's faults sometimes leave no refusal for check 15 to judge.
func (w *worker) idemCycle(phase int) {
	s := w.spec
	op := w.pickKey(phase)
	payload := "order-" + op
	if w.rng.Float64() < s.IdemMismatchP {
		payload = w.otherPayload()
	}
	if ev := w.idemDeliver(op, payload); ev.Outcome != "error" && !w.idemRefusalSeen.Load() {
		w.idemDeliver(op, w.otherPayload())
	}
}

// otherPayload is a payload no operation's own delivery carries.
func (w *worker) otherPayload() string {
	return fmt.Sprintf("other-w%d-%d", w.spec.Slot, w.rng.IntN(1000))
}

// idemDeliver delivers operation op with payload, emits the delivery's
// event and returns it.
func (w *worker) idemDeliver(op, payload string) Event {
	s := w.spec
	e := idemEvent{Op: op, Payload: payload}
	ctx, cancel := context.WithTimeout(context.Background(), s.MaxWait+s.MaxHold+time.Second)
	defer cancel()
	ev := Event{T: Mono(), Kind: EvIdemCall, Key: idemKey(op), Payload: e.Payload}
	ans, err := w.idemOp(ctx, e)
	ev.T2 = Mono()
	switch {
	case err != nil:
		ev.Outcome, ev.Err = "error", err.Error()
		if errors.Is(err, idempotency.ErrPayloadMismatch) {
			w.idemRefusalSeen.Store(true)
		}
	default:
		ev.Outcome, ev.Run, ev.AnsPayload = "ran", ans.Run, ans.Payload
		if ans.replay {
			ev.Outcome = "replay"
		}
	}
	w.emit(ev)
	return ev
}
