package httpmw_test

import (
	"context"
	"errors"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestBadConfigurationIsTheConstructorsError: every adapter's constructor
// returns a configuration it cannot run as an error matching
// lockcore.ErrConfig, and no handler, before any request: the handler and
// the key function never run, and the store is never asked.
func TestBadConfigurationIsTheConstructorsError(t *testing.T) {
	tests := []struct {
		name    string
		noH     bool
		noKey   bool
		noStore bool
		opts    []httpmw.Option
	}{
		{name: "nil handler", noH: true},
		{name: "nil key function", noKey: true},
		{name: "nil store", noStore: true},
		{name: "nil option", opts: []httpmw.Option{nil}},
		{name: "negative integration timeout", opts: []httpmw.Option{httpmw.WithIntegrationTimeout(-time.Second)}},
		{name: "negative fresh-success window", opts: []httpmw.Option{httpmw.WithFreshSuccess(-time.Second)}},
		{name: "blank lock group", opts: []httpmw.Option{httpmw.WithLockmwOptions(lockmw.WithLockGroup(" "))}},
		{name: "negative safety margin", opts: []httpmw.Option{httpmw.WithLockmwOptions(lockmw.WithSafetyMargin(-time.Second))}},
		// Cache-Control follows WithFreshSuccess's window: a second window
		// below would make them disagree.
		{name: "two fresh-success windows", opts: []httpmw.Option{httpmw.WithFreshSuccess(30 * time.Second),
			httpmw.WithLockmwOptions(lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &constructorCase{noH: tt.noH, noKey: tt.noKey, noStore: tt.noStore, opts: append([]httpmw.Option{quiet()}, tt.opts...)}
			checkConstructor(t, c, "REST", httpmw.NewREST[rate])
			checkConstructor(t, c, "HTTPAPI", httpmw.NewHTTPAPI[rate])
			checkConstructor(t, c, "FunctionURL", httpmw.NewFunctionURL[rate])
			checkConstructor(t, c, "ALB", httpmw.NewALB[rate])
		})
	}
}

// constructorCase is one configuration given to every constructor.
type constructorCase struct {
	noH, noKey, noStore bool
	opts                []httpmw.Option
}

func checkConstructor[Req httpmw.Request, Resp any](t *testing.T, c *constructorCase, name string,
	newAdapter func(func(context.Context, Req) (httpmw.Response[rate], error), storeapi.Store, func(context.Context, Req) (string, error), ...httpmw.Option) (func(context.Context, Req) (Resp, error), error)) {
	t.Helper()
	calls := 0
	h := func(context.Context, Req) (httpmw.Response[rate], error) { calls++; return httpmw.OK(rate{}), nil }
	key := func(context.Context, Req) (string, error) { calls++; return samplePair, nil }
	store := newKeyRecorder()
	var s storeapi.Store = store
	if c.noH {
		h = nil
	}
	if c.noKey {
		key = nil
	}
	if c.noStore {
		s = nil
	}
	f, err := newAdapter(h, s, key, c.opts...)
	if !errors.Is(err, lockcore.ErrConfig) {
		t.Errorf("%s: error %v, want one matching lockcore.ErrConfig", name, err)
	}
	if f != nil {
		t.Errorf("%s: a handler beside the error", name)
	}
	if calls != 0 || len(store.asked()) != 0 {
		t.Errorf("%s: %d handler or key calls, store asked %v: want none", name, calls, store.asked())
	}
}

// TestGoodConfigurationBuilds: the constructors build a handler from a
// configuration that can run, with every option given.
func TestGoodConfigurationBuilds(t *testing.T) {
	opts := []httpmw.Option{quiet(), httpmw.WithIntegrationTimeout(10 * time.Second), httpmw.WithFreshSuccess(0), httpmw.WithCodec(nil)}
	h := func(context.Context, events.APIGatewayProxyRequest) (httpmw.Response[rate], error) {
		return httpmw.OK(rate{}), nil
	}
	f, err := httpmw.NewREST(h, lockcore.NewMemoryStore(), httpmw.PathParam[events.APIGatewayProxyRequest]("pair"), opts...)
	if err != nil || f == nil {
		t.Fatalf("NewREST: %v", err)
	}
}
