package lockcore

// Metrics receives the lock's measurements, under the names that
// docs/operations.md lists ("The lock's metrics"). unit is a CloudWatch
// unit name ("Count" or "Milliseconds" here). emf.Metrics satisfies it; so does any
// adapter to another metrics system. Implementations must be safe for
// concurrent use, because renewal runs on its own goroutine.
type Metrics interface {
	AddMetric(name, unit string, value float64)
}

// Metric names, as the original TypeScript lock emitted them, plus
// metricTakeover, metricRetryAfterFailure, metricLeaseLost,
// metricSharedFailure, metricEpisodeAttempts, metricLateCopy and the
// announcement counts. docs/operations.md ("The lock's metrics") lists
// them for users; TestMetricNamesAreDocumented ties that list to these.
const (
	metricLockTimeout                 = "LockTimeout"                 // Count: maximum hold reached
	metricLongRenewalCall             = "LongRenewalCall"             // Count: a renewal outlasted the renewal interval
	metricStaleLock                   = "StaleLock"                   // Count: Acquire found our held lock taken over
	metricLockAcquisitionDuration     = "LockAcquisitionDuration"     // Milliseconds
	metricLockHoldDuration            = "LockHoldDuration"            // Milliseconds
	metricLockRenewal                 = "LockRenewal"                 // Count: renewals during one hold
	metricLockReleaseDuration         = "LockReleaseDuration"         // Milliseconds
	metricLockAcquisitionSuccess      = "LockAcquisitionSuccess"      // Count
	metricLockAcquisitionFailed       = "LockAcquisitionFailed"       // Count
	metricLockAcquisitionError        = "LockAcquisitionError"        // Count
	metricLockNotReleased             = "LockNotReleased"             // Count: a waiter found the lock abandoned
	metricLockAcquisitionWaitTimeout  = "LockAcquisitionWaitTimeout"  // Count
	metricWaitForLock                 = "WaitForLock"                 // Count
	metricLockAcquisitionWaitDuration = "LockAcquisitionWaitDuration" // Milliseconds
	metricLockPollCount               = "LockPollCount"               // Count
	metricTakeover                    = "LockTakeover"                // Count: a waiter took over an abandoned lease (a holder crashed, timed out or did not release)
	metricRetryAfterFailure           = "LockRetryAfterFailure"       // Count: acquired after the previous holder published a failure
	metricLeaseLost                   = "LockLeaseLost"               // Count: the holder lost its lease
	metricSharedFailure               = "LockSharedFailure"           // Count: a waiter ended with ErrHolderFailed
	metricEpisodeAttempts             = "LockEpisodeAttempts"         // Count: the attempt number, from 1, of a new holder in its failure episode
	metricLockThrottled               = "LockThrottled"               // Count: store calls the store throttled
	metricAnnouncementRead            = "LockAnnouncementRead"        // Count: a wait was Released by a release announcement (see Announcer)
	metricAnnouncementWrite           = "LockAnnouncementWrite"       // Count: announcement shards this waiter's relay wrote
	metricLateCopy                    = "LockLateCopy"                // Count: a wait found the lock held by a late copy of its own earlier acquire, and held or freed it, or of one its environment gave up, and freed it
)

const (
	unitCount        = "Count"
	unitMilliseconds = "Milliseconds"
)

type noMetrics struct{}

func (noMetrics) AddMetric(string, string, float64) {}
