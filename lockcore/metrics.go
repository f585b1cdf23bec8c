package lockcore

// Metrics receives the lock's measurements. unit is a CloudWatch unit name
// ("Count" or "Milliseconds" here). emf.Metrics satisfies it; so does any
// adapter to another metrics system. Implementations must be safe for
// concurrent use, because renewal runs on its own goroutine.
type Metrics interface {
	AddMetric(name, unit string, value float64)
}

// Metric names, as the original TypeScript lock emitted them, plus
// MetricTakeover, MetricRetryAfterFailure, MetricLeaseLost,
// MetricSharedFailure, MetricEpisodeAttempts, MetricLateCopy and the
// announcement counts.
const (
	MetricLockTimeout                 = "LockTimeout"                 // Count: maximum hold reached
	MetricLongRenewalCall             = "LongRenewalCall"             // Count: a renewal outlasted the renewal interval
	MetricStaleLock                   = "StaleLock"                   // Count: Acquire found our held lock taken over
	MetricLockAcquisitionDuration     = "LockAcquisitionDuration"     // Milliseconds
	MetricLockHoldDuration            = "LockHoldDuration"            // Milliseconds
	MetricLockRenewal                 = "LockRenewal"                 // Count: renewals during one hold
	MetricLockReleaseDuration         = "LockReleaseDuration"         // Milliseconds
	MetricLockAcquisitionSuccess      = "LockAcquisitionSuccess"      // Count
	MetricLockAcquisitionFailed       = "LockAcquisitionFailed"       // Count
	MetricLockAcquisitionError        = "LockAcquisitionError"        // Count
	MetricLockNotReleased             = "LockNotReleased"             // Count: a waiter found the lock abandoned
	MetricLockAcquisitionWaitTimeout  = "LockAcquisitionWaitTimeout"  // Count
	MetricWaitForLock                 = "WaitForLock"                 // Count
	MetricLockAcquisitionWaitDuration = "LockAcquisitionWaitDuration" // Milliseconds
	MetricLockPollCount               = "LockPollCount"               // Count
	MetricTakeover                    = "LockTakeover"                // Count: a waiter took over an abandoned lease (a holder crashed, timed out or did not release)
	MetricRetryAfterFailure           = "LockRetryAfterFailure"       // Count: acquired after the previous holder published a failure
	MetricLeaseLost                   = "LockLeaseLost"               // Count: the holder lost its lease
	MetricSharedFailure               = "LockSharedFailure"           // Count: a waiter ended with ErrHolderFailed
	MetricEpisodeAttempts             = "LockEpisodeAttempts"         // Count: the attempt number, from 1, of a new holder in its failure episode
	MetricLockThrottled               = "LockThrottled"               // Count: store calls the store throttled
	MetricAnnouncementRead            = "LockAnnouncementRead"        // Count: a wait was Released by a release announcement (see Announcer)
	MetricAnnouncementWrite           = "LockAnnouncementWrite"       // Count: announcement shards this waiter's relay wrote
	MetricLateCopy                    = "LockLateCopy"                // Count: a wait found the lock held by a late copy of its own earlier acquire, and held or freed it, or of one its environment gave up, and freed it
)

const (
	unitCount        = "Count"
	unitMilliseconds = "Milliseconds"
)

type noMetrics struct{}

func (noMetrics) AddMetric(string, string, float64) {}
