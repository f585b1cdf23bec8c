package storetest

import (
	"errors"
	"reflect"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// ServerModel says how the store under a differential test is known to
// differ from DynamoDB. [Diff] compares the store's answer with the
// reference's answer as the model transforms it, so a known gap is
// expected exactly where it shows and any other difference still fails
// the test. The zero ServerModel is [ExactModel].
//
// A ServerModel is safe for concurrent use; the state it keeps lives in
// one run.
type ServerModel struct {
	name     string
	newState func() modelState
	// sizeEdgeShift is how many bytes of result reference below the
	// reference store's largest full-answer release the server's largest
	// one is (0: the same).
	sizeEdgeShift int
}

// modelState is one run's state of a ServerModel.
type modelState interface {
	// expect returns the answer the server should give to step o, given
	// prevRef, the reference's item of o's key before o (nil: none), and
	// ref, the reference's answer. It is called once per step, in order.
	expect(o op, prevRef *storeapi.Item, ref outcome) outcome
}

// Name returns the model's name, such as "minidyn v0.8.2".
func (m ServerModel) Name() string {
	if m.name == "" {
		return "exact"
	}
	return m.name
}

func (m ServerModel) state() modelState {
	if m.newState == nil {
		return exactState{}
	}
	return m.newState()
}

// ExactModel expects exactly the reference's answers: a store on DynamoDB,
// or on dynalite behind the ALL_OLD-filling proxy (internal/allold).
func ExactModel() ServerModel { return ServerModel{} }

type exactState struct{}

func (exactState) expect(_ op, _ *storeapi.Item, ref outcome) outcome { return ref }

// MinidynModel expects the answers of a [lockcore.DynamoStore] on
// github.com/truora/minidyn v0.8.2, which differs from DynamoDB in these
// ways (see also lockcore's notes on its expressions):
//
//   - UpdateItem applies only the SET part of an expression that has both
//     SET and REMOVE. An applied Acquire (SET ..., REMOVE the result
//     attributes, the answer, and the TTL when the request has none)
//     therefore leaves the removed attributes as they were, and they stay
//     until a later write sets them. The model carries those kept
//     attributes forward per key and lays them over the reference's items.
//     Two consequences follow and are expected too: the next Acquire copies
//     a kept result into PrevResult (if_not_exists(#result, ...) finds
//     one), and a Release whose condition failed on an item whose
//     PrevRevision and PrevResult then name it is taken for its own earlier
//     publication and succeeds with that item.
//   - There is no item size limit: a Release that DynamoDB refuses because
//     the item would exceed 400 KB (the reference's [storeapi.ErrItemTooLarge])
//     is applied. The model expects it applied, as the Store contract
//     describes a Release, to the server's item; the generator makes such
//     a write the last step on its key.
//   - A SET operand is evaluated after the earlier assignments of the same
//     SET. Acquire's SET copies #rev and #result before it assigns #rev, so
//     this does not show; the model expects nothing of it, and a reordered
//     expression fails the run.
//
// Everything else is expected exactly as the reference answers: the guards
// that read the result attributes (fresh success, held-back failure, a
// retried release) all test "released" as well, kept result attributes sit
// only on items that are not released, and no condition reads the answer
// (a kept one does survive a later Release without an answer, and any
// Release that writes nothing: the retry of an applied one). What this
// model takes on trust, the run on dynalite, which has none of these gaps,
// checks exactly.
func MinidynModel() ServerModel {
	return ServerModel{name: "minidyn v0.8.2", newState: func() modelState {
		return &minidynState{kept: make(map[int]map[string]reflect.Value), last: make(map[int]*storeapi.Item)}
	}}
}

// acquireRemoves are the Item fields of the attributes that Acquire's
// update REMOVEs (lockcore's acquireRemove), besides TTL, which it removes
// only when the request carries none.
var acquireRemoves = []string{"Result", "ResultRef", "ResultFence", "ReleasedAtMs", "Answer"}

// releaseSets are the Item fields among acquireRemoves that every Release
// SETs; it sets Answer only when the request has one.
var releaseSets = []string{"Result", "ResultRef", "ResultFence", "ReleasedAtMs"}

type minidynState struct {
	kept map[int]map[string]reflect.Value // per key: fields whose value minidyn has and DynamoDB has not
	last map[int]*storeapi.Item           // per key: the server's item, as expected
}

func (m *minidynState) expect(o op, prevRef *storeapi.Item, ref outcome) outcome {
	kept := m.kept[o.key]
	if kept == nil {
		kept = make(map[string]reflect.Value)
		m.kept[o.key] = kept
	}
	last := m.last[o.key]
	if ref.class == classOK {
		switch o.kind {
		case opAcquire:
			if acquireApplied(prevRef, ref) {
				m.acquired(kept, last, o.acquire, ref.item)
			}
		case opRelease:
			if releaseWrites(prevRef, o.release) {
				for _, f := range releaseSets {
					delete(kept, f)
				}
				if len(o.release.Answer) > 0 {
					delete(kept, "Answer")
				}
			}
		}
	}
	want := ref
	if ref.item != nil {
		it := *ref.item
		iv := reflect.ValueOf(&it).Elem()
		for f, v := range kept {
			iv.FieldByName(f).Set(v)
		}
		want.item = &it
	}
	if o.kind == opRelease && ref.class == classError && errors.Is(ref.err, storeapi.ErrItemTooLarge) && last != nil {
		want = outcome{class: classOK, item: releasedItem(*last, o.release)}
	}
	if r := o.release; o.kind == opRelease && ref.class == classCondition && want.item != nil &&
		want.item.Revision != r.Revision && want.item.PrevRevision == r.Revision && want.item.PrevResult == r.Result &&
		!(r.Result == lockcore.Failure && !operatorRelease(r) &&
			(want.item.PrevFailReason == storeapi.OperatorReleaseReason || want.item.FailReason == storeapi.OperatorReleaseReason)) {
		want = outcome{class: classOK, item: want.item}
	}
	if want.class != classError && want.item != nil {
		m.last[o.key] = want.item
	}
	return want
}

// acquired updates kept for an applied Acquire of req over last, the
// server's item before it; written is the reference's new item.
func (m *minidynState) acquired(kept map[string]reflect.Value, last *storeapi.Item, req storeapi.AcquireRequest, written *storeapi.Item) {
	delete(kept, "PrevResult")
	if last == nil {
		return
	}
	if last.Result != written.PrevResult {
		kept["PrevResult"] = reflect.ValueOf(last.Result)
	}
	removed := acquireRemoves
	if req.TTL == 0 {
		removed = append(removed[:len(removed):len(removed)], "TTL")
	} else {
		delete(kept, "TTL")
	}
	lv := reflect.ValueOf(*last)
	for _, f := range removed {
		if v := lv.FieldByName(f); !v.IsZero() {
			kept[f] = v
		}
	}
}

// releaseWrites reports whether an answered Release of req wrote over prev,
// the reference's item before it: its condition held, prev being of req's
// revision and not released, or released by its holder with failure and req
// an operator's force-release. A retry of an applied release writes nothing
// (lockcore's releaseCond), and so does a recognised earlier publication.
func releaseWrites(prev *storeapi.Item, req storeapi.ReleaseRequest) bool {
	return prev != nil && prev.Revision == req.Revision && (!prev.Released ||
		operatorRelease(req) && prev.Result == lockcore.Failure && prev.FailReason != storeapi.OperatorReleaseReason)
}

// releasedItem returns it as an applied Release of req leaves it, by the
// Store contract.
func releasedItem(it storeapi.Item, req storeapi.ReleaseRequest) *storeapi.Item {
	it.Released, it.ReleasedAtMs, it.Result, it.ResultRef, it.ResultFence = true, req.NowMs, req.Result, req.ResultRef, it.Fence
	if req.HoldMeanMs > 0 {
		it.HoldMeanMs, it.HoldDevMs = req.HoldMeanMs, req.HoldDevMs
	}
	switch {
	case operatorRelease(req):
		it.PublishedRevision, it.PublishedResult = "", ""
	case !req.Unheld:
		it.PublishedRevision, it.PublishedResult = req.Revision, req.Result
	}
	if req.Result == lockcore.Success {
		if len(req.Answer) > 0 {
			it.Answer = req.Answer
		}
		it.Failures, it.NotBeforeMs, it.FailReason, it.FailRecentUntilMs = 0, 0, "", 0
		return &it
	}
	if !req.KeepEpisode {
		it.Failures, it.NotBeforeMs, it.FailReason, it.FailRecentUntilMs = req.Failures, req.NotBeforeMs, req.FailReason, req.FailRecentUntilMs
	}
	return &it
}

// acquireApplied reports whether a successful Acquire wrote the item, as
// opposed to recognising its own earlier write (which returns the item as
// it was; an applied acquire always raises the fence).
func acquireApplied(prevRef *storeapi.Item, ref outcome) bool {
	return ref.item != nil && (prevRef == nil || !reflect.DeepEqual(*prevRef, *ref.item))
}

// DynoxideModel expects the answers of a [lockcore.DynamoStore] on
// Dynoxide 1.2.1 (internal/dynoxide): the reference's answers, except at the
// 400 KB item limit, where Dynoxide measures an UpdateItem by a rule
// DynamoDB's documentation does not state (it documents the item limit as
// the sum of the attribute names' and values' sizes, and a number's size as
// approximately 1 byte per two significant digits plus 1):
//
//   - an UpdateItem is charged max(item, item - key attributes + 3 + 19 per
//     SET action + 2 per REMOVE action), so a Release (12 SET actions with
//     an answer) is refused at 231 bytes less the key's size below the
//     item limit;
//   - a number costs 1 + ceil(significant digits / 2) with trailing zeros
//     trimmed, without lockcore's pairing of digits from the decimal point
//     (1764547200000 is 5 bytes there, 6 in MemoryStore).
//
// The generator keeps items well below the limit, so only the size edge
// shows this: the model expects Dynoxide's largest release with a full
// answer (measured) 186 bytes of reference below MemoryStore's, to the
// byte, and a refusal one byte above.
func DynoxideModel() ServerModel {
	return ServerModel{name: "Dynoxide 1.2.1", newState: func() modelState { return exactState{} }, sizeEdgeShift: dynoxideSizeEdgeShift}
}

// dynoxideSizeEdgeShift is DynoxideModel's size-edge shift.
const dynoxideSizeEdgeShift = 186

// operatorRelease reports whether r is an operator's force-release (see
// [storeapi.OperatorReleaseReason]).
func operatorRelease(r storeapi.ReleaseRequest) bool {
	return r.Result == lockcore.Failure && !r.KeepEpisode && r.FailReason == storeapi.OperatorReleaseReason
}
