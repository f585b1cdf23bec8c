package lockcore

import (
	"strings"
	"testing"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// TestRequestTimeBeforeTheEpochIsRefused: both stores run these checks
// before anything is written, so they refuse a time no clock reads in the
// same way (a differential run found them comparing an absent attribute
// differently with such a time).
func TestRequestTimeBeforeTheEpochIsRefused(t *testing.T) {
	k := Key{Group: "g", ID: "k"}
	tests := []struct {
		name string
		err  error
	}{
		{"acquire", checkAcquireRequest(storeapi.AcquireRequest{Key: k, Revision: "r", NowMs: -1})},
		{"renew", checkRenewRequest(storeapi.RenewRequest{Key: k, Revision: "r", NowMs: -1})},
		{"release", checkReleaseRequest(storeapi.ReleaseRequest{Key: k, Revision: "r", Result: Failure, NowMs: -1})},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), "before the Unix epoch") {
			t.Errorf("%s at -1 ms = %v, want an error saying it is before the Unix epoch", tt.name, tt.err)
		}
	}
	if err := checkAcquireRequest(storeapi.AcquireRequest{Key: k, Revision: "r", NowMs: 0}); err != nil {
		t.Errorf("acquire at 0 ms = %v, want nil", err)
	}
}
