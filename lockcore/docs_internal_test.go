package lockcore

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/docstest"
)

// unexportedDefaults are the defaults lockcore keeps in unexported
// constants, by the row name the documentation gives them, in the order a
// cell lists them. internal/docstest checks the exported ones.
var unexportedDefaults = map[string][]any{
	"lockcore.FailureEpisode.MaxHoldBack":   {defaultMaxHoldBack},
	"lockcore.FailureEpisode.Window":        {DefaultLease}, // the lease
	"lockcore.Clocks.Allowance":             {defaultClockAllowance},
	"lockcore.Clocks.Drift":                 {defaultDrift},
	"lockcore.StoreCalls.MinLease":          {defaultMinLease},
	"lockcore.StoreCalls.RenewFloor":        {defaultRenewFloor},
	"lockcore.StoreCalls.AttemptTimeout":    {defaultAttemptTimeout},
	"lockcore.StoreCalls.ReleaseTimeout":    {defaultReleaseTimeout},
	"lockcore.StoreCalls.ReleaseAttempts":   {defaultReleaseAttempts},
	"lockcore.StoreCalls.ReleaseMaxBackoff": {defaultReleaseMaxBackoff},
	"lockcore.Herd.HotKeys":                 {defaultHotKeys},
	"lockcore.Herd.Announcements":           {defaultAnnounceShards},
	"lockcore.WithTTL":                      {defaultTTL},
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every unexported default of lockcore has a row in docs/configuration.md
// that states it as the code has it, and the README's defaults box states
// the ones it lists as the code has them.
func TestUnexportedDefaultsAreDocumented(t *testing.T) {
	var required []string
	for name := range unexportedDefaults {
		required = append(required, name)
	}
	for _, err := range docstest.Check(readDoc(t, "docs/configuration.md"), unexportedDefaults, required) {
		t.Errorf("docs/configuration.md: %v", err)
	}
	for _, err := range docstest.Check(readDoc(t, "README.md"), unexportedDefaults, nil) {
		t.Errorf("README.md: %v", err)
	}
	// The check is not kinder than the page: a drifted row fails it.
	md := readDoc(t, "docs/configuration.md")
	broken := strings.Replace(md, "| `lockcore.StoreCalls.ReleaseTimeout` | `10s`", "| `lockcore.StoreCalls.ReleaseTimeout` | `9s`", 1)
	if broken == md {
		t.Fatal("docs/configuration.md has no release-timeout row to break")
	}
	errs := docstest.Check(broken, unexportedDefaults, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "documented 9s, the code has "+(10*time.Second).String()) {
		t.Errorf("want the release timeout's drift, got %v", errs)
	}
}
