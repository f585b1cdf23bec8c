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
// them. Options given to New win over them.
const (
	EnvNamespace = "POWERTOOLS_METRICS_NAMESPACE"
	EnvService   = "POWERTOOLS_SERVICE_NAME"
	EnvDisabled  = "POWERTOOLS_METRICS_DISABLED"
	// EnvFunctionName sets the function_name dimension of the ColdStart
	// metric, as [WithFunctionName] does.
	EnvFunctionName = "POWERTOOLS_METRICS_FUNCTION_NAME"
	// EnvDev ("true", "1", ...) indents every document over several lines,
	// for reading local runs; CloudWatch needs one document per line, so
	// leave it off in Lambda.
	EnvDev = "POWERTOOLS_DEV"
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
	errorOnEmpty bool
	functionName string
	pretty       bool
	prettySet    bool
}

// WithNamespace sets the CloudWatch namespace of every metric. Default: the
// POWERTOOLS_METRICS_NAMESPACE environment variable; New fails with
// [ErrNoNamespace] when neither is set.
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

// WithClock sets the function Flush asks for the document timestamp.
// Default: time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithErrorOnEmpty makes Flush return [ErrNoMetrics] when no metric was
// added since the last flush. Default: false, and such a Flush writes
// nothing and returns nil.
func WithErrorOnEmpty(on bool) Option {
	return func(o *options) { o.errorOnEmpty = on }
}

// WithDisabled turns output off: metrics are still checked and errors still
// returned, but Flush writes nothing. Default: the
// POWERTOOLS_METRICS_DISABLED environment variable ("true", "1", "false",
// ...), else false.
func WithDisabled(disabled bool) Option {
	return func(o *options) { o.disabled, o.disabledSet = disabled, true }
}

// WithFunctionName sets the function_name dimension of the ColdStart
// metric, over the name given to CaptureColdStart. Default: the
// POWERTOOLS_METRICS_FUNCTION_NAME environment variable, else the name
// given to CaptureColdStart, else AWS_LAMBDA_FUNCTION_NAME.
func WithFunctionName(name string) Option {
	return func(o *options) { o.functionName = name }
}

// WithPretty indents every document over several lines, for reading local
// runs; CloudWatch Logs needs one document per line, so never use it in
// Lambda. Default: the POWERTOOLS_DEV environment variable ("true", "1",
// ...), else false.
func WithPretty(on bool) Option {
	return func(o *options) { o.pretty, o.prettySet = on, true }
}

func (o *options) fromEnv() error {
	if o.functionName == "" {
		o.functionName = strings.TrimSpace(os.Getenv(EnvFunctionName))
	}
	if !o.prettySet {
		if s := strings.TrimSpace(os.Getenv(EnvDev)); s != "" {
			d, err := strconv.ParseBool(strings.ToLower(s))
			if err != nil {
				return fmt.Errorf("%w: %s=%s", ErrInvalidOption, EnvDev, quote(s))
			}
			o.pretty = d
		}
	}
	if !o.namespaceSet {
		o.namespace = os.Getenv(EnvNamespace)
	}
	if !o.serviceSet {
		o.service = os.Getenv(EnvService)
	}
	if !o.disabledSet {
		if s := strings.TrimSpace(os.Getenv(EnvDisabled)); s != "" {
			d, err := strconv.ParseBool(strings.ToLower(s))
			if err != nil {
				return fmt.Errorf("%w: %s=%s", ErrInvalidOption, EnvDisabled, quote(s))
			}
			o.disabled = d
		}
	}
	return nil
}
