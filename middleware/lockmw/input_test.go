package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
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
		{"negative account", ok, store, keyOf, options(lockmw.WithHolder(lockmw.Holder{AccountID: -1})), "WithHolder: negative record account"},
		{"nil option", ok, store, keyOf, options(nil), "option 3 is nil"},
		{"both metrics", ok, store, keyOf, options(lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(t, io.Discard)})), "EMF and EMFWriter are exclusive"},
		{"blank group", ok, store, keyOf, options(lockmw.WithLockGroup("")), "blank group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := lockmw.New(tt.h, tt.store, tt.key, tt.opts...)
			if f != nil || !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() = %v, %v; want nil and ErrConfig mentioning %q", f != nil, err, tt.want)
			}
			w := lockmw.Wrap(tt.h, tt.store, tt.key, append([]lockmw.Option{lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()})}, tt.opts...)...)
			for range 2 {
				if _, werr := w(t.Context(), event{Key: "k"}); !errors.Is(werr, lockcore.ErrConfig) {
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

// The record account on the lock item: outside Lambda (no function ARN
// in the context, as in a test or a local run) the local account, and the
// caller gets the handler's answer; in Lambda the function's account;
// WithHolder's ids win. An ARN without an account is a configuration
// error, and the handler does not run.
func TestRecordAccount(t *testing.T) {
	outside := func(ctx context.Context) context.Context { return ctx }
	inLambda := func(ctx context.Context) context.Context {
		return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req", InvokedFunctionArn: testARN})
	}
	tests := []struct {
		name        string
		ctx         func(context.Context) context.Context
		opts        []lockmw.Option
		wantAccount string // "": a configuration error
	}{
		{"outside Lambda", outside, nil, "act:1/app:1"},
		{"Lambda context without a function ARN", func(ctx context.Context) context.Context {
			return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req"})
		}, nil, "act:1/app:1"},
		{"in Lambda", inLambda, nil, "act:123456789012/app:1"},
		{"WithHolder outside Lambda", outside, []lockmw.Option{lockmw.WithHolder(lockmw.Holder{AccountID: 42, AppID: 7})}, "act:42/app:7"},
		{"WithHolder's application in Lambda", inLambda, []lockmw.Option{lockmw.WithHolder(lockmw.Holder{AppID: 7})}, "act:123456789012/app:7"},
		{"function ARN without an account", func(ctx context.Context) context.Context {
			return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req", InvokedFunctionArn: "arn:aws:lambda:eu-west-1::function:fx"})
		}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran atomic.Bool
			store := lockcore.NewMemoryStore()
			h := mustNew(t, func(ctx context.Context, e event) (string, error) { ran.Store(true); return "rate", nil },
				store, options(tt.opts...)...)
			got, err := h(tt.ctx(t.Context()), event{Key: "k"})
			if tt.wantAccount == "" {
				if !errors.Is(err, lockcore.ErrConfig) || ran.Load() {
					t.Fatalf("h() = %q, %v, handler ran %v; want a configuration error without running", got, err, ran.Load())
				}
				return
			}
			if err != nil || got != "rate" {
				t.Fatalf("h() = %q, %v; want the handler's answer", got, err)
			}
			if it := item(t, store, lockcore.Key{Group: group, ID: "k"}); it.RecordAccount != tt.wantAccount {
				t.Errorf("record account on the item = %q, want %q", it.RecordAccount, tt.wantAccount)
			}
		})
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
			options(lockmw.WithHolder(lockmw.Holder{Name: func(ctx context.Context) string { return "me" }}))...)
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
			store, lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}),
			lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(t, &buf)}))
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

// The struct options may be given more than once: each sets the fields it
// does not leave zero, and a zero field keeps what an earlier one set.
func TestStructOptionsMerge(t *testing.T) {
	var logs, metrics syncBuffer
	store := lockcore.NewMemoryStore()
	h, err := lockmw.New(func(context.Context, event) (string, error) { return "rate", nil }, store, keyOf,
		lockmw.WithLockGroup(group),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &metrics}),
		lockmw.WithHolder(lockmw.Holder{AccountID: 42}),
		lockmw.WithHolder(lockmw.Holder{Name: func(context.Context) string { return "worker-7" }}))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	if got, err := h(t.Context(), event{Key: "k"}); err != nil || got != "rate" {
		t.Fatalf("h() = %q, %v; want the handler's answer", got, err)
	}
	if !strings.Contains(logs.String(), "lockmw: invocation done") {
		t.Errorf("the first WithTelemetry's logger got %q; want the invocation's log line", logs.String())
	}
	if docs := emfDocs(t, metrics.String()); len(docs) != 1 {
		t.Errorf("the second WithTelemetry's writer got %d metrics documents, want 1", len(docs))
	}
	it := item(t, store, lockcore.Key{Group: group, ID: "k"})
	if it.RecordAccount != "act:42/app:1" || it.Holder != "worker-7" {
		t.Errorf("item's record account and holder = %q, %q; want act:42/app:1 (the first WithHolder) and worker-7 (the second)", it.RecordAccount, it.Holder)
	}
}
