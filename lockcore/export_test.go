package lockcore

// Unexported values the external tests of this package use.

// The metric names.
const (
	MetricLockTimeout                 = metricLockTimeout
	MetricLongRenewalCall             = metricLongRenewalCall
	MetricStaleLock                   = metricStaleLock
	MetricLockAcquisitionDuration     = metricLockAcquisitionDuration
	MetricLockHoldDuration            = metricLockHoldDuration
	MetricLockRenewal                 = metricLockRenewal
	MetricLockReleaseDuration         = metricLockReleaseDuration
	MetricLockAcquisitionSuccess      = metricLockAcquisitionSuccess
	MetricLockAcquisitionFailed       = metricLockAcquisitionFailed
	MetricLockAcquisitionError        = metricLockAcquisitionError
	MetricLockNotReleased             = metricLockNotReleased
	MetricLockAcquisitionWaitTimeout  = metricLockAcquisitionWaitTimeout
	MetricWaitForLock                 = metricWaitForLock
	MetricLockAcquisitionWaitDuration = metricLockAcquisitionWaitDuration
	MetricLockPollCount               = metricLockPollCount
	MetricTakeover                    = metricTakeover
	MetricRetryAfterFailure           = metricRetryAfterFailure
	MetricLeaseLost                   = metricLeaseLost
	MetricSharedFailure               = metricSharedFailure
	MetricEpisodeAttempts             = metricEpisodeAttempts
	MetricLockThrottled               = metricLockThrottled
	MetricAnnouncementRead            = metricAnnouncementRead
	MetricAnnouncementWrite           = metricAnnouncementWrite
	MetricLateCopy                    = metricLateCopy
)

// The defaults kept unexported.
const (
	DefaultMinLease          = defaultMinLease
	DefaultRenewFloor        = defaultRenewFloor
	DefaultClockAllowance    = defaultClockAllowance
	DefaultDrift             = defaultDrift
	DefaultMaxHoldBack       = defaultMaxHoldBack
	DefaultReleaseAttempts   = defaultReleaseAttempts
	DefaultReleaseMaxBackoff = defaultReleaseMaxBackoff
	DefaultReleaseTimeout    = defaultReleaseTimeout
	DefaultAttemptTimeout    = defaultAttemptTimeout
	DefaultTTL               = defaultTTL
	DefaultHotKeys           = defaultHotKeys
	DefaultAnnounceShards    = defaultAnnounceShards
)
