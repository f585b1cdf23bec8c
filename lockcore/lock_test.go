package lockcore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

func TestNewRejectsBadInput(t *testing.T) {
	store := lockcore.NewMemoryStore()
	tests := []struct {
		name   string
		store  storeapi.Store
		params lockcore.Params
		opts   []lockcore.Option
		want   []string // substrings of the error
	}{
		{"all blank", store, lockcore.Params{LockID: " ", AccountID: 1, AppID: 1}, nil,
			[]string{"LockID, LockGroup, HolderName"}},
		{"zero account", store, lockcore.Params{LockID: "a", LockGroup: "b", HolderName: "c", AppID: 1}, nil,
			[]string{"AccountID must be positive"}},
		{"negative app", store, lockcore.Params{LockID: "a", LockGroup: "b", HolderName: "c", AccountID: 1, AppID: -2}, nil,
			[]string{"AppID must be positive"}},
		{"nil store", nil, params("o"), nil, []string{"store is required"}},
		{"negative lease", store, params("o"), []lockcore.Option{lockcore.WithLease(-time.Second)},
			[]string{"lease must not be negative"}},
		{"negative wait", store, params("o"), []lockcore.Option{lockcore.WithMaxWait(-1)},
			[]string{"maximum wait must not be negative"}},
		{"zero poll", store, params("o"), []lockcore.Option{lockcore.WithPollInterval(0)},
			[]string{"poll interval must be positive"}},
		{"no release attempts", store, params("o"), []lockcore.Option{lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseAttempts: -1, ReleaseMaxBackoff: time.Second})},
			[]string{"release attempts must be at least 1"}},
		{"negative attempt timeout", store, params("o"), []lockcore.Option{lockcore.WithStoreCalls(lockcore.StoreCalls{AttemptTimeout: -time.Second})},
			[]string{"attempt timeout must not be negative"}},
		{"no attempts per episode", store, params("o"), []lockcore.Option{lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: -1})},
			[]string{"maximum attempts must be at least 1"}},
		{"negative hold-back", store, params("o"), []lockcore.Option{lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxHoldBack: -time.Minute})},
			[]string{"maximum hold-back must not be negative"}},
		// Fields of one Herd that contradict each other: neither may win
		// silently.
		{"hot keys and no hot keys", store, params("o"), []lockcore.Option{lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(8), NoHotKeys: true})},
			[]string{"HotKeys and NoHotKeys"}},
		{"announcements and no announcements", store, params("o"), []lockcore.Option{lockcore.WithHerd(lockcore.Herd{Announcements: 4, NoAnnouncements: true})},
			[]string{"Announcements and NoAnnouncements"}},
		{"drift of one", store, params("o"), []lockcore.Option{lockcore.WithClocks(lockcore.Clocks{Drift: 1})},
			[]string{"drift must be above 0 and below 1"}},
		{"negative clock allowance", store, params("o"), []lockcore.Option{lockcore.WithClocks(lockcore.Clocks{Allowance: -time.Second})},
			[]string{"clock allowance must not be negative"}},
		{"too many announcements", store, params("o"), []lockcore.Option{lockcore.WithHerd(lockcore.Herd{Announcements: storeapi.MaxAnnounceShards + 1})},
			[]string{"announcements must be in [0, 64]"}},
		{"everything at once", nil, lockcore.Params{}, nil,
			[]string{"LockID, LockGroup, HolderName", "AccountID", "AppID", "store is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := lockcore.New(tt.store, tt.params, tt.opts...)
			if err == nil || l != nil {
				t.Fatalf("New() = %v, %v, want an error", l, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New() error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNewRaisesShortLeaseWithWarning(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	l, err := lockcore.New(lockcore.NewMemoryStore(), params("o"),
		lockcore.WithLease(100*time.Millisecond), lockcore.WithStoreCalls(lockcore.StoreCalls{MinLease: 2 * time.Second}), lockcore.WithLogger(logger))
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	if got := l.Lease(); got != 2*time.Second {
		t.Errorf("Lease() = %v, want 2s", got)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "below minimum") {
		t.Errorf("log = %q, want a warning about the minimum", buf.String())
	}
}

func TestGettersAndRecordAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "owner-1")
		if l.LockID() != "EUR-USD" || l.LockGroup() != "fx" || l.HolderName() != "owner-1" {
			t.Errorf("getters = %q %q %q", l.LockID(), l.LockGroup(), l.HolderName())
		}
		if l.HasLock() || l.HasRenewal() || l.Revision() != "" || l.Fence() != 0 {
			t.Errorf("before Acquire: HasLock %v HasRenewal %v Revision %q Fence %d, want zero values",
				l.HasLock(), l.HasRenewal(), l.Revision(), l.Fence())
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrNotHeld) {
			t.Errorf("Context() cause before Acquire = %v, want ErrNotHeld", cause)
		}
		mustAcquire(t, l)
		it, found, err := store.Get(context.Background(), l.Key())
		if err != nil || !found {
			t.Fatalf("Get() = %v, %v", found, err)
		}
		if it.RecordAccount != "act:7/app:9" || it.Holder != "owner-1" || it.Revision != l.Revision() || it.Fence != l.Fence() {
			t.Errorf("item = %+v, want account act:7/app:9, owner-1, revision %q, fence %d", it, l.Revision(), l.Fence())
		}
		if !l.HasLock() || !l.HasRenewal() || !l.Valid() {
			t.Errorf("after Acquire: HasLock %v HasRenewal %v Valid %v, want true", l.HasLock(), l.HasRenewal(), l.Valid())
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

func TestAcquireIsExclusiveAndFencesIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		a, b := newLock(t, store, "a"), newLock(t, store, "b")
		mustAcquire(t, a)
		if ok, err := b.Acquire(context.Background()); ok || err != nil {
			t.Fatalf("second holder Acquire() = %v, %v, want false, nil", ok, err)
		}
		fa := a.Fence()
		mustRelease(t, a, lockcore.Success, "")
		mustAcquire(t, b)
		if b.Fence() != fa+1 {
			t.Errorf("Fence() after re-acquire = %d, want %d", b.Fence(), fa+1)
		}
		mustRelease(t, b, lockcore.Success, "")
	})
}

func TestAcquireWhenHeldChecksForStaleLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		m := &recMetrics{}
		a := newLock(t, store, "a", lockcore.WithMetrics(m))
		mustAcquire(t, a)
		mustAcquire(t, a) // still ours: true again, one hold

		// Another holder takes the key over, as after a lapsed lease.
		it, _, _ := store.Get(context.Background(), a.Key())
		_, err := store.Acquire(context.Background(), storeapi.AcquireRequest{
			Key: a.Key(), Holder: "b", Revision: "rev-b", Lease: time.Second, ExpiresAtMs: 1,
			Observed: &storeapi.Observation{Revision: it.Revision, Beat: it.Beat},
		})
		if err != nil {
			t.Fatalf("take-over Acquire() error = %v", err)
		}
		ok, err := a.Acquire(context.Background())
		var ae *lockcore.AcquireError
		if ok || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonStaleLock {
			t.Fatalf("Acquire() on a stale hold = %v, %v, want AcquireError stale_lock", ok, err)
		}
		if a.HasLock() || !m.has(lockcore.MetricStaleLock) {
			t.Errorf("after stale: HasLock %v, StaleLock metric %v, want false, true", a.HasLock(), m.has(lockcore.MetricStaleLock))
		}
		if cause := context.Cause(a.Context()); !errors.Is(cause, lockcore.ErrLeaseLost) {
			t.Errorf("Context() cause = %v, want ErrLeaseLost", cause)
		}
	})
}

func TestCheckForStaleLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		if stale, err := l.CheckForStaleLock(context.Background()); !stale || err != nil {
			t.Errorf("CheckForStaleLock() before Acquire = %v, %v, want true, nil", stale, err)
		}
		mustAcquire(t, l)
		if stale, err := l.CheckForStaleLock(context.Background()); stale || err != nil {
			t.Errorf("CheckForStaleLock() while held = %v, %v, want false, nil", stale, err)
		}
		hs := &hookStore{Store: store, get: func(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
			return storeapi.Item{}, false, errInjected
		}}
		l2 := newLock(t, hs, "b")
		if _, err := l2.CheckForStaleLock(context.Background()); err != nil {
			t.Errorf("CheckForStaleLock() not held = %v, want nil error without I/O", err)
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}
