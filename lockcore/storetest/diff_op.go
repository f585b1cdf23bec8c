package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// opKind is the Store method one step calls.
type opKind int

const (
	opAcquire opKind = iota
	opRenew
	opRelease
	opGet
	opAnnounce
	opGetAnnouncement
)

func (k opKind) String() string {
	return [...]string{"Acquire", "Renew", "Release", "Get", "Announce", "GetAnnouncement"}[k]
}

// op is one step of a differential run: one Store call on one of the run's
// keys, with every argument concrete, so that a sequence of steps replays
// exactly. The Key fields of the requests are left zero; the run fills in
// the key that index key names.
type op struct {
	kind    opKind
	key     int
	acquire storeapi.AcquireRequest
	renew   storeapi.RenewRequest
	release storeapi.ReleaseRequest
	ann     storeapi.Announcement // Announce; its Shard alone for GetAnnouncement
}

// apply calls the store with o on k and returns what it answered.
func (o op) apply(ctx context.Context, s storeapi.Store, k lockcore.Key) outcome {
	switch o.kind {
	case opAcquire:
		r := o.acquire
		r.Key = k
		it, err := s.Acquire(ctx, r)
		return outcomeOf(it, err)
	case opRenew:
		r := o.renew
		r.Key = k
		it, err := s.Renew(ctx, r)
		return outcomeOf(it, err)
	case opRelease:
		r := o.release
		r.Key = k
		it, err := s.Release(ctx, r)
		return outcomeOf(it, err)
	case opAnnounce, opGetAnnouncement:
		an, ok := s.(storeapi.Announcer)
		if !ok {
			return outcome{class: classError, err: fmt.Errorf("%T is not a storeapi.Announcer", s)}
		}
		if o.kind == opAnnounce {
			a := o.ann
			a.Key = k
			applied, err := an.Announce(ctx, a)
			if err != nil {
				return outcome{class: classError, err: err}
			}
			return outcome{class: classOK, applied: applied}
		}
		a, found, err := an.GetAnnouncement(ctx, k, o.ann.Shard)
		switch {
		case err != nil:
			return outcome{class: classError, err: err}
		case !found:
			return outcome{class: classOK}
		}
		return outcome{class: classOK, ann: &a}
	default:
		it, found, err := s.Get(ctx, k)
		if err != nil || !found {
			return outcomeOf(storeapi.Item{}, err)
		}
		return outcomeOf(it, nil)
	}
}

// outcomeClass is how a store call ended.
type outcomeClass int

const (
	classOK        outcomeClass = iota // nil error
	classCondition                     // a *storeapi.ConditionError
	classError                         // any other error
)

func (c outcomeClass) String() string {
	return [...]string{"ok", "condition failed", "error"}[c]
}

// outcome is what one store call answered, in the terms the stores must
// agree on: the class, the ConditionError's Op, and the item (the one
// returned, the ConditionError's Current, or the one Get found; nil for
// none). Error texts are not compared.
type outcome struct {
	class outcomeClass
	op    string
	item  *storeapi.Item
	err   error

	applied bool                   // Announce: the announcement was written
	ann     *storeapi.Announcement // GetAnnouncement: what it found
}

// outcomeOf classifies a store's answer. A zero item with a nil error (Get
// of an absent key) has no item.
func outcomeOf(it storeapi.Item, err error) outcome {
	var ce *storeapi.ConditionError
	switch {
	case err == nil:
		if reflect.ValueOf(it).IsZero() {
			return outcome{class: classOK}
		}
		return outcome{class: classOK, item: &it}
	case errors.As(err, &ce):
		return outcome{class: classCondition, op: ce.Op, item: ce.Current, err: err}
	default:
		return outcome{class: classError, err: err}
	}
}

// differences lists how got differs from want, field by field; none means
// the outcomes agree.
func differences(got, want outcome) []string {
	var d []string
	if got.class != want.class {
		d = append(d, fmt.Sprintf("outcome %s (%v), want %s", got.class, got.err, want.class))
		return d
	}
	if got.class == classError {
		return nil
	}
	if got.op != want.op {
		d = append(d, fmt.Sprintf("ConditionError.Op %q, want %q", got.op, want.op))
	}
	if got.applied != want.applied {
		d = append(d, fmt.Sprintf("announcement applied %t, want %t", got.applied, want.applied))
	}
	switch {
	case got.ann == nil && want.ann == nil:
	case got.ann == nil || want.ann == nil:
		d = append(d, fmt.Sprintf("announcement %+v, want %+v", got.ann, want.ann))
	default:
		g, w := *got.ann, *want.ann
		if string(g.Answer) != string(w.Answer) {
			d = append(d, fmt.Sprintf("announcement answer %s, want %s", short(string(g.Answer)), short(string(w.Answer))))
		}
		g.Answer, w.Answer = nil, nil
		if !reflect.DeepEqual(g, w) {
			d = append(d, fmt.Sprintf("announcement %+v, want %+v", g, w))
		}
	}
	switch {
	case got.item == nil && want.item == nil:
	case got.item == nil:
		d = append(d, "no item, want "+itemString(want.item))
	case want.item == nil:
		d = append(d, itemString(got.item)+", want no item")
	default:
		g, w := reflect.ValueOf(*got.item), reflect.ValueOf(*want.item)
		for i := range g.NumField() {
			if !sameField(g.Field(i), w.Field(i)) {
				name := g.Type().Field(i).Name
				d = append(d, fmt.Sprintf("item.%s = %s, want %s", name, fieldString(name, g.Field(i)), fieldString(name, w.Field(i))))
			}
		}
	}
	return d
}

// sameField compares one Item field. Byte slices compare by content, so an
// empty and an absent binary attribute are the same (neither is an answer).
func sameField(a, b reflect.Value) bool {
	if a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.Uint8 {
		return string(a.Bytes()) == string(b.Bytes())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// String prints o with times relative to baseMs ("t+1500").
func (o op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "k%d %s", o.key, o.kind)
	switch o.kind {
	case opAcquire:
		r := o.acquire
		fmt.Fprintf(&b, " rev=%q owner=%q now=%s lease=%s until=%s expires=%s account=%q ttl=%d fenceBase=%d",
			r.Revision, r.Holder, ms(r.NowMs), r.Lease, ms(r.LeaseUntilMs), ms(r.ExpiresAtMs), r.RecordAccount, r.TTL, r.FenceBase)
		if r.UseWallClock {
			fmt.Fprintf(&b, " wallClock(allowance=%s)", r.ClockAllowance)
		}
		if r.Observed != nil {
			fmt.Fprintf(&b, " observed(%q, beat %d)", r.Observed.Revision, r.Observed.Beat)
		}
		if r.FreshSuccessSinceMs != 0 {
			fmt.Fprintf(&b, " freshSuccessSince=%s", ms(r.FreshSuccessSinceMs))
		}
		if r.MaxAttempts != 0 {
			fmt.Fprintf(&b, " maxAttempts=%d", r.MaxAttempts)
		}
	case opRenew:
		r := o.renew
		fmt.Fprintf(&b, " rev=%q now=%s until=%s", r.Revision, ms(r.NowMs), ms(r.LeaseUntilMs))
	case opAnnounce:
		a := o.ann
		fmt.Fprintf(&b, " shard=%d fence=%d ref=%s releasedAt=%s answer=%s omitted=%t ttl=%d",
			a.Shard, a.Fence, short(a.ResultRef), ms(a.ReleasedAtMs), short(string(a.Answer)), a.AnswerOmitted, a.TTL)
	case opGetAnnouncement:
		fmt.Fprintf(&b, " shard=%d", o.ann.Shard)
	case opRelease:
		r := o.release
		fmt.Fprintf(&b, " rev=%q now=%s result=%q ref=%s", r.Revision, ms(r.NowMs), r.Result, short(r.ResultRef))
		if r.Answer != nil {
			fmt.Fprintf(&b, " answer=%s", short(string(r.Answer)))
		}
		if r.KeepEpisode {
			b.WriteString(" keepEpisode")
		}
		if r.Unheld {
			b.WriteString(" unheld")
		}
		if r.Failures != 0 || r.NotBeforeMs != 0 || r.FailReason != "" || r.FailRecentUntilMs != 0 {
			fmt.Fprintf(&b, " failures=%d notBefore=%s failReason=%q failRecentUntil=%s",
				r.Failures, ms(r.NotBeforeMs), r.FailReason, ms(r.FailRecentUntilMs))
		}
	}
	return b.String()
}

// String prints the outcome briefly.
func (c outcome) String() string {
	s := c.class.String()
	if c.class == classError {
		return s
	}
	switch {
	case c.applied:
		return s + ", announced"
	case c.ann != nil:
		return fmt.Sprintf("%s, announcement fence %d", s, c.ann.Fence)
	case c.item == nil:
		return s + ", no item"
	}
	return s + ", " + itemString(c.item)
}

// itemString prints the fields of it that are set, times relative to baseMs.
func itemString(it *storeapi.Item) string {
	v := reflect.ValueOf(*it)
	var parts []string
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if f.IsZero() || name == "Key" {
			continue
		}
		parts = append(parts, name+"="+fieldString(name, f))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// fieldString prints the value f of the Item field name.
func fieldString(name string, f reflect.Value) string {
	switch x := f.Interface().(type) {
	case int64:
		if strings.HasSuffix(name, "Ms") {
			return ms(x)
		}
		return fmt.Sprint(x)
	case time.Duration:
		return x.String()
	case []byte:
		return short(string(x))
	case string:
		return short(x)
	case lockcore.Result:
		return fmt.Sprintf("%q", x)
	default:
		return fmt.Sprint(x)
	}
}

// ms prints an epoch-milliseconds value relative to baseMs.
func ms(v int64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("t%+d", v-baseMs)
}

// short quotes v, or only its length and head when it is long.
func short(v string) string {
	if len(v) <= 40 {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q...(%d bytes)", v[:16], len(v))
}
