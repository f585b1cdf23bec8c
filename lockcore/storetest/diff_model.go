package storetest

import (
	"reflect"

	"github.com/herdlock/herdlock/lockcore"
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
}

// modelState is one run's state of a ServerModel.
type modelState interface {
	// expect returns the answer the server should give to step o, given
	// prevRef, the reference's item of o's key before o (nil: none), and
	// ref, the reference's answer. It is called once per step, in order.
	expect(o op, prevRef *lockcore.Item, ref outcome) outcome
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

func (exactState) expect(_ op, _ *lockcore.Item, ref outcome) outcome { return ref }

// MinidynModel expects the answers of a [lockcore.DynamoStore] on
// github.com/truora/minidyn v0.8.2, whose UpdateItem applies only the SET
// part of an expression that has both SET and REMOVE: an applied Acquire
// (SET ... REMOVE result attributes, and the TTL when the request has none)
// leaves the removed attributes as they were, and they stay until a later
// write sets them. The model carries those kept attributes forward per key
// and lays them over the reference's items.
//
// It expects the same outcome class as the reference everywhere: the kept
// attributes (Result, ResultRef, ResultFence, ReleasedAtMs, TTL) sit on an
// item that is not released, and every condition that reads them is
// guarded by "released" (Acquire's fresh-success test, Release's
// same-result test). Should a condition ever read them on an unreleased
// item, minidyn's outcome differs and the run fails: the model is then out
// of date, not the store.
func MinidynModel() ServerModel {
	return ServerModel{name: "minidyn v0.8.2", newState: func() modelState {
		return &minidynState{kept: make(map[int]map[string]reflect.Value), last: make(map[int]*lockcore.Item)}
	}}
}

// acquireRemoves are the Item fields of the attributes that Acquire's
// update REMOVEs (lockcore's acquireRemove), besides TTL, which it removes
// only when the request carries none.
var acquireRemoves = []string{"Result", "ResultRef", "ResultFence", "ReleasedAtMs", "Answer"}

// releaseSets are the Item fields of the attributes Release's update always
// SETs that Acquire removes; it sets Answer only when the request has one.
var releaseSets = []string{"Result", "ResultRef", "ResultFence", "ReleasedAtMs"}

type minidynState struct {
	kept map[int]map[string]reflect.Value // per key: fields minidyn kept that DynamoDB removed
	last map[int]*lockcore.Item           // per key: the server's item, as expected
}

func (m *minidynState) expect(o op, prevRef *lockcore.Item, ref outcome) outcome {
	kept := m.kept[o.key]
	if kept == nil {
		kept = make(map[string]reflect.Value)
		m.kept[o.key] = kept
	}
	if ref.class == classOK {
		switch o.kind {
		case opAcquire:
			if acquireApplied(prevRef, ref) {
				removed := acquireRemoves
				if o.acquire.TTL == 0 {
					removed = append(removed[:len(removed):len(removed)], "TTL")
				} else {
					delete(kept, "TTL")
				}
				if last := m.last[o.key]; last != nil {
					lv := reflect.ValueOf(*last)
					for _, f := range removed {
						if v := lv.FieldByName(f); !v.IsZero() {
							kept[f] = v
						}
					}
				}
			}
		case opRelease:
			for _, f := range releaseSets {
				delete(kept, f)
			}
			if len(o.release.Answer) > 0 {
				delete(kept, "Answer")
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
		// Acquire copies the server's result, kept or not, as PrevResult.
		if last := m.last[o.key]; o.kind == opAcquire && ref.class == classOK && acquireApplied(prevRef, ref) && last != nil {
			it.PrevResult = last.Result
		}
		want.item = &it
	}
	if want.class != classError && want.item != nil {
		m.last[o.key] = want.item
	}
	return want
}

// acquireApplied reports whether a successful Acquire wrote the item, as
// opposed to recognising its own earlier write (which returns the item as
// it was; an applied acquire always raises the fence).
func acquireApplied(prevRef *lockcore.Item, ref outcome) bool {
	return ref.item != nil && (prevRef == nil || !reflect.DeepEqual(*prevRef, *ref.item))
}
