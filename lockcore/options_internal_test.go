package lockcore

import (
	"testing"
	"time"
)

// fixedClock is a wall clock that always reads the same time.
type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Unix(1, 0) }

// The folded options set what their fields say, a zero field leaves the
// setting as an earlier option (or the default) left it, and the No…
// fields turn a default off.
func TestFoldedOptionsSetTheirFieldsAndLeaveZeroFields(t *testing.T) {
	hot := NewHotKeys(3)
	tests := []struct {
		name  string
		opts  []Option
		check func(o options) bool
	}{
		{"defaults", nil, func(o options) bool {
			return o.minLease == time.Second && o.renewFloor == 500*time.Millisecond && o.attemptTimeout == 500*time.Millisecond &&
				o.releaseTimeout == 10*time.Second && o.releaseAttempts == 5 && o.releaseMaxBackoff == 2*time.Second &&
				o.clockAllowance == time.Second && o.drift == 0.01 && o.useWallClock && o.clock == Clock(systemClock{}) &&
				o.maxAttempts == DefaultMaxAttempts && o.maxHoldBack == 2*time.Minute && o.failureWindow == 0 &&
				!o.readFirst && !o.hotKeysSet && o.announceShards == 8 && o.ttl == 7*24*time.Hour
		}},
		{"store calls", []Option{WithStoreCalls(StoreCalls{MinLease: 2 * time.Second, RenewFloor: time.Second, AttemptTimeout: time.Second,
			ReleaseTimeout: 3 * time.Second, ReleaseAttempts: 2, ReleaseMaxBackoff: time.Second})}, func(o options) bool {
			return o.minLease == 2*time.Second && o.renewFloor == time.Second && o.attemptTimeout == time.Second &&
				o.releaseTimeout == 3*time.Second && o.releaseAttempts == 2 && o.releaseMaxBackoff == time.Second
		}},
		{"a later store-calls option keeps the earlier fields", []Option{WithStoreCalls(StoreCalls{AttemptTimeout: time.Second}),
			WithStoreCalls(StoreCalls{ReleaseTimeout: 3 * time.Second})}, func(o options) bool {
			return o.attemptTimeout == time.Second && o.releaseTimeout == 3*time.Second && o.releaseAttempts == 5
		}},
		{"clocks", []Option{WithClocks(Clocks{Wall: fixedClock{}, Allowance: 2 * time.Second, Drift: 0.05, NoWallClockPath: true})}, func(o options) bool {
			return o.clock == Clock(fixedClock{}) && o.clockAllowance == 2*time.Second && o.drift == 0.05 && !o.useWallClock
		}},
		{"a later clocks option keeps the earlier fields", []Option{WithClocks(Clocks{Drift: 0.05}), WithClocks(Clocks{Allowance: 2 * time.Second})},
			func(o options) bool { return o.drift == 0.05 && o.clockAllowance == 2*time.Second && o.useWallClock }},
		{"failure episode", []Option{WithFailureEpisode(FailureEpisode{MaxAttempts: 3, MaxHoldBack: time.Minute, Window: 4 * time.Second})},
			func(o options) bool {
				return o.maxAttempts == 3 && o.maxHoldBack == time.Minute && o.failureWindow == 4*time.Second
			}},
		{"a later failure-episode option keeps the earlier fields", []Option{WithFailureEpisode(FailureEpisode{MaxAttempts: 1}),
			WithFailureEpisode(FailureEpisode{Window: time.Second})}, func(o options) bool {
			return o.maxAttempts == 1 && o.failureWindow == time.Second && o.maxHoldBack == 2*time.Minute
		}},
		{"herd", []Option{WithHerd(Herd{ReadFirst: true, HotKeys: hot, Announcements: 3})}, func(o options) bool {
			return o.readFirst && o.hotKeysSet && o.hotKeys == hot && o.announceShards == 3
		}},
		{"herd without memory or announcements", []Option{WithHerd(Herd{Announcements: 3, HotKeys: hot}), WithHerd(Herd{NoHotKeys: true, NoAnnouncements: true})},
			func(o options) bool { return o.hotKeysSet && o.hotKeys == nil && o.announceShards == 0 && !o.readFirst }},
		{"a later herd option keeps the earlier fields", []Option{WithHerd(Herd{ReadFirst: true}), WithHerd(Herd{Announcements: 2})},
			func(o options) bool { return o.readFirst && !o.hotKeysSet && o.announceShards == 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOptions()
			for _, opt := range tt.opts {
				opt(&o)
			}
			if err := o.validate(); err != nil {
				t.Fatalf("validate() = %v", err)
			}
			if !tt.check(o) {
				t.Errorf("options = %+v", o)
			}
		})
	}
}
