package capacity

import (
	"fmt"
	"net/http"
	"time"
)

// Defaults of [Config]: DynamoDB's per-partition limits, which cap one item.
const (
	DefaultWriteUnits = 1000.0 // WCU per second per item
	DefaultReadUnits  = 3000.0 // RCU per second per item
	DefaultBurst      = time.Second
	DefaultRegion     = "us-east-1"
	DefaultAccount    = "000000000000"
)

// Exception names the error type of a throttled answer.
type Exception string

const (
	// ProvisionedThroughputExceeded is what DynamoDB returns for a hot key
	// on a provisioned table (and the SDK's default throttle code).
	ProvisionedThroughputExceeded Exception = "ProvisionedThroughputExceededException"
	// Throttling is the ThrottlingException of on-demand tables.
	Throttling Exception = "ThrottlingException"
)

// Config configures a [Proxy]. The zero value of a field means its default.
type Config struct {
	// Upstream is the base URL of the DynamoDB-API server.
	Upstream string
	// Transport carries requests to Upstream. Default: a transport of its
	// own, without proxies from the environment.
	Transport http.RoundTripper
	// WriteUnits and ReadUnits are the per-item refill rates, in capacity
	// units per second. Defaults [DefaultWriteUnits], [DefaultReadUnits].
	WriteUnits float64
	ReadUnits  float64
	// Burst is how many seconds of units a full bucket holds. Default
	// [DefaultBurst]. Buckets start full.
	Burst time.Duration
	// Exception is the error type of throttled answers. Default
	// [ProvisionedThroughputExceeded].
	Exception Exception
	// Region and Account make the table ARN of the throttling reasons.
	// Defaults [DefaultRegion] and [DefaultAccount].
	Region  string
	Account string
	// Now is the clock of the buckets. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	if c.Upstream == "" {
		return c, fmt.Errorf("capacity: no upstream URL")
	}
	if c.WriteUnits < 0 || c.ReadUnits < 0 || c.Burst < 0 {
		return c, fmt.Errorf("capacity: rates and burst must not be negative (write %v, read %v, burst %v)", c.WriteUnits, c.ReadUnits, c.Burst)
	}
	if c.WriteUnits == 0 {
		c.WriteUnits = DefaultWriteUnits
	}
	if c.ReadUnits == 0 {
		c.ReadUnits = DefaultReadUnits
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	switch c.Exception {
	case "":
		c.Exception = ProvisionedThroughputExceeded
	case ProvisionedThroughputExceeded, Throttling:
	default:
		return c, fmt.Errorf("capacity: unknown exception %q", c.Exception)
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.Account == "" {
		c.Account = DefaultAccount
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
