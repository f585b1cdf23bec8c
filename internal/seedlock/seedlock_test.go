package seedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/internal/seedlock"
	"github.com/herdlock/herdlock/lockcore"
)

func newLock(t *testing.T, endpoint, owner string) *seedlock.Lock {
	t.Helper()
	l, err := seedlock.New(dynalite.NewClient(endpoint), "locks",
		seedlock.Params{LockID: "id", LockGroup: "group", HolderName: owner, AccountID: 1, AppID: 1},
		seedlock.WithLease(time.Second), seedlock.WithPollInterval(50*time.Millisecond), seedlock.WithMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return l
}

func TestAcquireWaitRelease(t *testing.T) {
	s := dynoxidetest.Start(t)
	ctx := context.Background()
	if err := lockcore.CreateTable(ctx, dynalite.NewClient(s.Endpoint()), "locks"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	a, b := newLock(t, s.Endpoint(), "a"), newLock(t, s.Endpoint(), "b")
	if got, err := a.TryAcquireElseWaitForRelease(ctx); got != seedlock.Acquired || err != nil {
		t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v, want ACQUIRED", got, err)
	}
	if a.Fence() == 0 || !a.HasLock() {
		t.Errorf("Fence() = %d, HasLock() = %v after acquiring", a.Fence(), a.HasLock())
	}
	done := make(chan seedlock.Outcome, 1)
	go func() {
		out, _ := b.TryAcquireElseWaitForRelease(ctx)
		done <- out
	}()
	time.Sleep(300 * time.Millisecond) // let b start waiting: the outcome is the same either way
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if got := <-done; got != seedlock.Released {
		t.Errorf("waiter got %v, want RELEASED", got)
	}
	if a.HasLock() || a.Context().Err() == nil {
		t.Errorf("after Release: HasLock() = %v, Context().Err() = %v", a.HasLock(), a.Context().Err())
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		p    seedlock.Params
	}{
		{"blank fields", seedlock.Params{AccountID: 1, AppID: 1}},
		{"account", seedlock.Params{LockID: "i", LockGroup: "g", HolderName: "o", AppID: 1}},
		{"app", seedlock.Params{LockID: "i", LockGroup: "g", HolderName: "o", AccountID: 1}},
	}
	for _, tt := range tests {
		if _, err := seedlock.New(dynalite.NewClient("http://127.0.0.1:1"), "t", tt.p); err == nil {
			t.Errorf("New(%s) = nil error, want one", tt.name)
		}
	}
}

func TestRevisionTime(t *testing.T) {
	if got := seedlock.RevisionTime("0190a1b2-c3d4-7000-8000-000000000000"); got != 0x0190a1b2c3d4 {
		t.Errorf("RevisionTime() = %x, want 190a1b2c3d4", got)
	}
}
