package main

import (
	"testing"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/dynoxide"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/internal/sandbox"
)

// emulatorStack is what the end-to-end tests under the Runtime Interface
// Emulator share: the emulator binary, the example's bootstrap built once
// for the test, and a Dynoxide server.
type emulatorStack struct {
	rie, boot string
	db        *dynoxide.Server
}

// newEmulatorStack builds the bootstrap, with the build tags tags, and
// starts Dynoxide for t; both end with t.
func newEmulatorStack(t *testing.T, tags ...string) *emulatorStack {
	t.Helper()
	rie, err := sandbox.RIEPath()
	if err != nil {
		t.Fatal(err) // says: run make deps
	}
	boot, err := sandbox.BuildBootstrap(t.Context(), localrun.Package, t.TempDir(), "", tags...)
	if err != nil {
		t.Fatal(err)
	}
	return &emulatorStack{rie: rie, boot: boot, db: dynoxidetest.Start(t)}
}

// start starts a local run of o on the stack, closed when t ends.
func (s *emulatorStack) start(t *testing.T, o localrun.Options) *localrun.Run {
	t.Helper()
	o.DynamoEndpoint, o.RIE, o.Bootstrap = s.db.Endpoint(), s.rie, s.boot
	r, err := localrun.Start(t.Context(), o)
	if err != nil {
		t.Fatalf("localrun.Start() = %v", err)
	}
	t.Cleanup(r.Close)
	return r
}
