package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// testAnnouncements checks a store's release announcements (see
// [storeapi.Announcer]); every store the project ships keeps them, so a
// Store that is not an Announcer fails. An announcement is written over an
// absent shard or one of a lower fence only; one of the same or a lower
// fence is not applied and changes nothing; shards of one key and the same
// shard of two keys are apart; the answer, the omitted-answer flag and the
// TTL are kept; an invalid announcement is refused before writing; and an
// announcement is not a lock item: Get of the key does not see it.
func testAnnouncements(t *testing.T, e *env) {
	an, ok := e.s.(storeapi.Announcer)
	if !ok {
		t.Fatalf("%T does not implement storeapi.Announcer", e.s)
	}
	k, other := e.key("k"), e.key("other")
	get := func(key lockcore.Key, shard int) (storeapi.Announcement, bool) {
		t.Helper()
		a, found, err := an.GetAnnouncement(ctx(t), key, shard)
		if err != nil {
			t.Fatalf("GetAnnouncement(%s, %d) = %v", key.ID, shard, err)
		}
		return a, found
	}
	announce := func(a storeapi.Announcement, want bool) {
		t.Helper()
		applied, err := an.Announce(ctx(t), a)
		if err != nil || applied != want {
			t.Fatalf("Announce(%s, shard %d, fence %d) = %t, %v, want %t, nil", a.Key.ID, a.Shard, a.Fence, applied, err, want)
		}
	}
	wantAnn := func(call string, got storeapi.Announcement, found bool, want storeapi.Announcement) {
		t.Helper()
		if !found || got.Key != want.Key || got.Shard != want.Shard || got.Fence != want.Fence || got.ResultRef != want.ResultRef ||
			got.ReleasedAtMs != want.ReleasedAtMs || !bytes.Equal(got.Answer, want.Answer) || got.AnswerOmitted != want.AnswerOmitted ||
			got.TTL != want.TTL {
			t.Errorf("%s = %+v (found %t), want %+v", call, got, found, want)
		}
	}
	if _, found := get(k, 3); found {
		t.Fatalf("GetAnnouncement(absent) found an announcement")
	}
	first := storeapi.Announcement{Key: k, Shard: 3, Fence: 5, ResultRef: "ref-5", ReleasedAtMs: baseMs, Answer: []byte("answer"), TTL: ttlSeconds}
	announce(first, true)
	a, found := get(k, 3)
	wantAnn("GetAnnouncement after Announce", a, found, first)

	same := first
	same.ResultRef = "other"
	announce(same, false)
	older := first
	older.Fence, older.ResultRef = 4, "ref-4"
	announce(older, false)
	a, found = get(k, 3)
	wantAnn("GetAnnouncement after refused announcements", a, found, first)

	later := storeapi.Announcement{Key: k, Shard: 3, Fence: 9, ResultRef: "ref-9", ReleasedAtMs: baseMs + 10, AnswerOmitted: true, TTL: ttlSeconds + 1}
	announce(later, true)
	a, found = get(k, 3)
	wantAnn("GetAnnouncement after a later fence", a, found, later)

	if _, found := get(k, 4); found {
		t.Errorf("GetAnnouncement(another shard) found an announcement")
	}
	if _, found := get(other, 3); found {
		t.Errorf("GetAnnouncement(another key's shard) found an announcement")
	}
	if _, found, err := e.s.Get(ctx(t), k); err != nil || found {
		t.Errorf("Get(key with announcements only) = found %t, %v, want not found", found, err)
	}

	for _, bad := range []storeapi.Announcement{
		{Key: k, Shard: -1, Fence: 10},
		{Key: k, Shard: storeapi.MaxAnnounceShards, Fence: 10},
		{Key: k, Shard: 3, Fence: 0},
		{Key: k, Shard: 3, Fence: 10, ResultRef: "bad\xff"},
		{Key: k, Shard: 3, Fence: 10, Answer: []byte("x"), AnswerOmitted: true},
		{Key: k, Shard: 3, Fence: 10, Answer: make([]byte, storeapi.MaxAnnouncedAnswerBytes+1)},
	} {
		if applied, err := an.Announce(ctx(t), bad); err == nil || applied || errors.Is(err, storeapi.ErrConditionFailed) {
			t.Errorf("Announce(%+v) = %t, %v, want a request error", bad, applied, err)
		}
	}
	if _, _, err := an.GetAnnouncement(ctx(t), k, storeapi.MaxAnnounceShards); err == nil {
		t.Errorf("GetAnnouncement(shard %d) = nil error, want one", storeapi.MaxAnnounceShards)
	}
	a, found = get(k, 3)
	wantAnn("GetAnnouncement after invalid announcements", a, found, later)
}
