package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

func TestConfigErrors(t *testing.T) {
	store := lockcore.NewMemoryStore()
	ok := func(ctx context.Context, e event) (string, error) { return "", nil }
	tests := []struct {
		name  string
		h     func(context.Context, event) (string, error)
		store storeapi.Store
		key   func(context.Context, event) (string, error)
		opts  []lockmw.Option
		want  string
	}{
		{"nil handler", nil, store, keyOf, options(), "nil handler"},
		{"nil store", ok, nil, keyOf, options(), "nil store"},
		{"nil key function", ok, store, nil, options(), "nil key function"},
		{"negative margin", ok, store, keyOf, options(lockmw.WithSafetyMargin(-time.Second)), "negative duration"},
		{"negative lease", ok, store, keyOf, options(lockmw.WithLockOptions(lockcore.WithLease(-time.Second))), "lease must not be negative"},
		{"bad account", ok, store, keyOf, options(lockmw.WithRecordAccount(0, 1)), "ids must be positive"},
		{"nil option", ok, store, keyOf, options(nil), "option 3 is nil"},
		{"nil logger", ok, store, keyOf, options(lockmw.WithLogger(nil)), "nil logger"},
		{"both metrics", ok, store, keyOf, options(lockmw.WithMetrics(newTestMetrics(t, io.Discard))), "exclusive"},
		{"blank group", ok, store, keyOf, options(lockmw.WithLockGroup("")), "blank group"},
		{"nil owner function", ok, store, keyOf, options(lockmw.WithOwnerName(nil)), "WithOwnerName: nil function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := lockmw.New(tt.h, tt.store, tt.key, tt.opts...)
			if f != nil || !errors.Is(err, lockmw.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() = %v, %v; want nil and ErrConfig mentioning %q", f != nil, err, tt.want)
			}
			w := lockmw.Wrap(tt.h, tt.store, tt.key, append([]lockmw.Option{lockmw.WithLogger(discardLogger())}, tt.opts...)...)
			for range 2 {
				if _, werr := w(t.Context(), event{Key: "k"}); !errors.Is(werr, lockmw.ErrConfig) {
					t.Errorf("Wrap()() = %v, want ErrConfig on every call", werr)
				}
			}
		})
	}
}

func TestKeyErrors(t *testing.T) {
	bad := errors.New("no pair in event")
	tests := []struct {
		name string
		key  func(context.Context, event) (string, error)
	}{
		{"key function fails", func(context.Context, event) (string, error) { return "", bad }},
		{"blank key", func(context.Context, event) (string, error) { return "  ", nil }},
		{"blank static key", lockmw.StaticKey[event](" ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran atomic.Bool
			h, err := lockmw.New(func(ctx context.Context, e event) (string, error) { ran.Store(true); return "", nil },
				lockcore.NewMemoryStore(), tt.key, options()...)
			if err != nil {
				t.Fatalf("New() = %v", err)
			}
			ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
			defer cancel()
			if _, err := h(ctx, event{}); !errors.Is(err, lockmw.ErrKey) || ran.Load() {
				t.Errorf("h() = %v, handler ran %v; want ErrKey without running", err, ran.Load())
			}
		})
	}
}

func TestNoAccount(t *testing.T) {
	var ran atomic.Bool
	h := mustNew(t, func(ctx context.Context, e event) (string, error) { ran.Store(true); return "", nil },
		lockcore.NewMemoryStore(), options()...)
	if _, err := h(t.Context(), event{Key: "k"}); !errors.Is(err, lockmw.ErrNoAccount) || ran.Load() {
		t.Errorf("h() without Lambda context = %v, handler ran %v; want ErrNoAccount without running", err, ran.Load())
	}
}

func TestPanicReleasesAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		h := mustNew(t, func(ctx context.Context, e event) (string, error) { panic("upstream parser") }, store, options()...)
		ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
		defer cancel()
		got := func() (r any) {
			defer func() { r = recover() }()
			_, _ = h(ctx, event{Key: "k"})
			return nil
		}()
		if got != "upstream parser" {
			t.Errorf("recovered %v, want the handler's panic value", got)
		}
		if it := item(t, store, lockcore.Key{Group: group, ID: "k"}); !it.Released || it.Result != lockcore.Failure {
			t.Errorf("item after panic = %+v; want released with failure", it)
		}
	})
}

func TestFromContextWithoutInfo(t *testing.T) {
	if info, ok := lockmw.FromContext(t.Context()); ok || info != (lockmw.Info{}) {
		t.Errorf("FromContext(plain) = %+v, %v; want zero, false", info, ok)
	}
}

func TestStaticKeyAndOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		h, err := lockmw.New(func(ctx context.Context, e event) (string, error) { return "", nil },
			store, lockmw.StaticKey[event](" all "),
			options(lockmw.WithOwnerName(func(ctx context.Context) string { return "me" }))...)
		if err != nil {
			t.Fatalf("New() = %v", err)
		}
		ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
		defer cancel()
		if _, err := h(ctx, event{Key: "ignored"}); err != nil {
			t.Fatalf("h() = %v", err)
		}
		if it := item(t, store, lockcore.Key{Group: group, ID: "all"}); it.Holder != "me" {
			t.Errorf("item owner = %q, want me", it.Holder)
		}
	})
}

// TestMetricsOnePerInvocation: one EMF document per invocation (here no
// cold start), the service as the only dimension, the lock id a property.
func TestMetricsOnePerInvocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		store := lockcore.NewMemoryStore()
		h := mustNew(t, func(ctx context.Context, e event) (string, error) { return "", nil },
			store, lockmw.WithLockGroup(group), lockmw.WithLogger(discardLogger()),
			lockmw.WithMetrics(newTestMetrics(t, &buf)))
		for i := range 3 {
			ctx, cancel := invocationContext(t.Context(), time.Minute, fmt.Sprint("req-", i))
			if _, err := h(ctx, event{Key: fmt.Sprint("pair-", i)}); err != nil {
				t.Fatalf("h() = %v", err)
			}
			cancel()
		}
		docs := emfDocs(t, buf.String())
		if len(docs) != 3 {
			t.Fatalf("%d EMF documents, want 3:\n%s", len(docs), buf.String())
		}
		for i, d := range docs {
			if d["lockId"] != fmt.Sprint("pair-", i) || d["requestId"] != fmt.Sprint("req-", i) || d["lockOutcome"] != "ACQUIRED" {
				t.Errorf("document %d properties = %v; want lockId pair-%d, requestId req-%d, ACQUIRED", i, d, i, i)
			}
			if d["LockAcquisitionSuccess"] != 1.0 || d["LockHoldDuration"] == nil {
				t.Errorf("document %d lacks the lock metrics: %v", i, d)
			}
			cw := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
			dims := fmt.Sprint(cw["Dimensions"])
			if dims != "[[service]]" {
				t.Errorf("document %d dimensions = %s, want only [[service]]", i, dims)
			}
		}
	})
}
