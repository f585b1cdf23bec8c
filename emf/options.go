package emf

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by [New], as Powertools for AWS Lambda names
// them (the package documentation lists them, and a test ties that list to
// these names). Options given to New win over them.
const (
	envNamespace = "POWERTOOLS_METRICS_NAMESPACE"
	envService   = "POWERTOOLS_SERVICE_NAME"
	// envDisabled ("true", "1", ...) turns output off: metrics are still
	// checked and errors still returned, but Flush writes nothing.
	envDisabled = "POWERTOOLS_METRICS_DISABLED"
	// envFunctionName sets the function_name dimension of the ColdStart
	// metric, over the name given to CaptureColdStart.
	envFunctionName = "POWERTOOLS_METRICS_FUNCTION_NAME"
	// envDev ("true", "1", ...) indents every document over several lines,
	// for reading local runs; CloudWatch needs one document per line, so
	// leave it off in Lambda.
	envDev = "POWERTOOLS_DEV"
)

// Option configures [New].
type Option func(*options)

type options struct {
	namespace    string
	namespaceSet bool
	service      string
	serviceSet   bool
	disabled     bool
	disabledSet  bool
	writer       io.Writer
	defaults     map[string]string
	now          func() time.Time
	functionName string
	pretty       bool
	prettySet    bool
}

// WithNamespace sets the CloudWatch namespace of every metric. Default: the
// POWERTOOLS_METRICS_NAMESPACE environment variable; New fails with an
// error matching [ErrInvalid] when neither is set.
func WithNamespace(ns string) Option {
	return func(o *options) { o.namespace, o.namespaceSet = ns, true }
}

// WithService sets the service name, added to every document as the
// "service" dimension. Default: the POWERTOOLS_SERVICE_NAME environment
// variable; with neither, or with an empty name, there is no service
// dimension.
func WithService(name string) Option {
	return func(o *options) { o.service, o.serviceSet = name, true }
}

// WithWriter sets where Flush writes, one JSON document per line and per
// Write call. Default: os.Stdout, which Lambda sends to CloudWatch Logs.
func WithWriter(w io.Writer) Option {
	return func(o *options) { o.writer = w }
}

// WithDefaultDimensions sets dimensions added to every document, after the
// service and sorted by name. They survive Flush. Default: none. Repeated
// uses merge.
func WithDefaultDimensions(dims map[string]string) Option {
	return func(o *options) {
		if o.defaults == nil {
			o.defaults = make(map[string]string, len(dims))
		}
		for k, v := range dims {
			o.defaults[k] = v
		}
	}
}

// withClock sets the function Flush asks for the document timestamp, for
// the package's tests. Default: time.Now.
func withClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// withDisabled is POWERTOOLS_METRICS_DISABLED as an option, for the
// package's tests.
func withDisabled(disabled bool) Option {
	return func(o *options) { o.disabled, o.disabledSet = disabled, true }
}

// withFunctionName is POWERTOOLS_METRICS_FUNCTION_NAME as an option, for
// the package's tests.
func withFunctionName(name string) Option {
	return func(o *options) { o.functionName = name }
}

// withPretty is POWERTOOLS_DEV as an option, for the package's tests.
func withPretty(on bool) Option {
	return func(o *options) { o.pretty, o.prettySet = on, true }
}

func (o *options) fromEnv() error {
	if o.functionName == "" {
		o.functionName = strings.TrimSpace(os.Getenv(envFunctionName))
	}
	if !o.prettySet {
		if s := strings.TrimSpace(os.Getenv(envDev)); s != "" {
			d, err := strconv.ParseBool(strings.ToLower(s))
			if err != nil {
				return fmt.Errorf("%w environment variable: %s=%s", ErrInvalid, envDev, quote(s))
			}
			o.pretty = d
		}
	}
	if !o.namespaceSet {
		o.namespace = os.Getenv(envNamespace)
	}
	if !o.serviceSet {
		o.service = os.Getenv(envService)
	}
	if !o.disabledSet {
		if s := strings.TrimSpace(os.Getenv(envDisabled)); s != "" {
			d, err := strconv.ParseBool(strings.ToLower(s))
			if err != nil {
				return fmt.Errorf("%w environment variable: %s=%s", ErrInvalid, envDisabled, quote(s))
			}
			o.disabled = d
		}
	}
	return nil
}
