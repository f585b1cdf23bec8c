package fetchcache

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// Environment variables the function reads at init. template.yaml sets the
// same names; the template test checks that the two lists agree.
const (
	EnvLockTable        = "LOCK_TABLE"
	EnvCacheTable       = "CACHE_TABLE"
	EnvUpstreamURL      = "UPSTREAM_URL"
	EnvServiceName      = "POWERTOOLS_SERVICE_NAME"
	EnvMetricsNamespace = "POWERTOOLS_METRICS_NAMESPACE"
	EnvLogLevel         = "LOG_LEVEL"
	EnvLambdaLogLevel   = "AWS_LAMBDA_LOG_LEVEL" // set by Lambda from LoggingConfig; wins over LOG_LEVEL
	EnvCacheTTL         = "CACHE_TTL"
	EnvLockGroup        = "LOCK_GROUP"
	EnvAnswerMode       = "ANSWER_MODE"
	EnvDynamoDBEndpoint = "DYNAMODB_ENDPOINT" // local runs only: Dynoxide
	EnvTracing          = "TRACING"           // xray, otel or off

	// The OpenTelemetry variables that LoadConfig checks when TRACING is
	// otel; the OpenTelemetry SDK reads them (and the other OTEL_ ones).
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvOTelServiceName    = "OTEL_SERVICE_NAME"
)

// Tracing modes, the values of TRACING.
const (
	TracingXRay = "xray" // X-Ray SDK subsegments to the X-Ray daemon (Lambda's Tracing: Active)
	TracingOTel = "otel" // OpenTelemetry spans over OTLP/HTTP to a collector
	TracingOff  = "off"
)

// AllEnv lists every variable LoadConfig reads.
var AllEnv = []string{
	EnvLockTable, EnvCacheTable, EnvUpstreamURL, EnvServiceName, EnvMetricsNamespace,
	EnvLogLevel, EnvLambdaLogLevel, EnvCacheTTL, EnvLockGroup, EnvAnswerMode, EnvDynamoDBEndpoint, EnvTracing,
	EnvOTLPEndpoint, EnvOTLPTracesEndpoint, EnvOTLPProtocol, EnvOTLPTracesProtocol, EnvOTelServiceName,
}

// RequiredEnv lists the variables without a default. CACHE_TABLE is
// required too in the cache answer mode, the default.
var RequiredEnv = []string{EnvLockTable, EnvUpstreamURL, EnvServiceName, EnvMetricsNamespace}

// Answer modes, the values of ANSWER_MODE.
const (
	// AnswerCache: the holder stores the item in the cache table and the
	// waiters read it there ([NewHandler]). The default.
	AnswerCache = "cache"
	// AnswerInline: no cache table; the holder's Response travels in the
	// lock item ([NewInlineHandler]).
	AnswerInline = "inline"
)

// Defaults of the optional settings.
const (
	defaultCacheTTL  = 5 * time.Minute
	defaultLockGroup = "fetch-cache"
	defaultLogLevel  = slog.LevelInfo
)

// Config is everything main reads from the environment, checked.
type Config struct {
	LockTable        string
	CacheTable       string
	UpstreamURL      *url.URL
	ServiceName      string
	MetricsNamespace string
	LogLevel         slog.Level
	CacheTTL         time.Duration
	LockGroup        string
	AnswerMode       string // AnswerCache or AnswerInline
	DynamoDBEndpoint string // empty: the regional AWS endpoint
	// Tracing is TracingXRay, TracingOTel or TracingOff. Default: off
	// with DynamoDBEndpoint (a local run), else xray.
	Tracing string
}

// LoadConfig reads the configuration through getenv (os.Getenv in main). It
// reports every missing or invalid variable at once, by name.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var errs []error
	for _, k := range RequiredEnv {
		if get(k) == "" {
			errs = append(errs, fmt.Errorf("%s is required", k))
		}
	}
	c := Config{
		LockTable:        get(EnvLockTable),
		CacheTable:       get(EnvCacheTable),
		ServiceName:      get(EnvServiceName),
		MetricsNamespace: get(EnvMetricsNamespace),
		LogLevel:         defaultLogLevel,
		CacheTTL:         defaultCacheTTL,
		LockGroup:        defaultLockGroup,
		AnswerMode:       AnswerCache,
	}
	if s := get(EnvUpstreamURL); s != "" {
		u, err := parseHTTPURL(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvUpstreamURL, err))
		}
		c.UpstreamURL = u
	}
	if s := get(EnvDynamoDBEndpoint); s != "" {
		if _, err := parseHTTPURL(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvDynamoDBEndpoint, err))
		}
		c.DynamoDBEndpoint = s
	}
	for _, k := range []string{EnvLambdaLogLevel, EnvLogLevel} {
		s := get(k)
		if s == "" {
			continue
		}
		lvl, err := parseLevel(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
		c.LogLevel = lvl
		break
	}
	if s := get(EnvCacheTTL); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %q is not a duration such as 5m or 30s", EnvCacheTTL, s))
		case d <= 0:
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", EnvCacheTTL, s))
		}
		c.CacheTTL = d
	}
	if s := get(EnvLockGroup); s != "" {
		c.LockGroup = s
	}
	c.Tracing, errs = loadTracing(get, c.DynamoDBEndpoint != "", errs)
	switch s := get(EnvAnswerMode); s {
	case "", AnswerCache:
		if c.CacheTable == "" {
			errs = append(errs, fmt.Errorf("%s is required", EnvCacheTable))
		}
	case AnswerInline:
		c.AnswerMode = AnswerInline
	default:
		errs = append(errs, fmt.Errorf("%s: %q is not %s or %s", EnvAnswerMode, s, AnswerCache, AnswerInline))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("lambda-fetch-cache: configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// loadTracing reads TRACING, and with otel checks the OTLP variables that
// the exporter would otherwise reject only at the first flush.
func loadTracing(get func(string) string, local bool, errs []error) (string, []error) {
	mode := strings.ToLower(get(EnvTracing))
	switch mode {
	case "":
		if local {
			return TracingOff, errs
		}
		return TracingXRay, errs
	case TracingXRay, TracingOff:
		return mode, errs
	case TracingOTel:
	default:
		return "", append(errs, fmt.Errorf("%s: %q is not one of xray, otel, off", EnvTracing, get(EnvTracing)))
	}
	for _, k := range []string{EnvOTLPEndpoint, EnvOTLPTracesEndpoint} {
		if s := get(k); s != "" {
			if _, err := parseHTTPURL(s); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
			}
		}
	}
	for _, k := range []string{EnvOTLPProtocol, EnvOTLPTracesProtocol} {
		if s := get(k); s != "" && s != "http/protobuf" {
			errs = append(errs, fmt.Errorf("%s: %q: this function exports OTLP over HTTP only (http/protobuf)", k, s))
		}
	}
	return mode, errs
}

func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http or https URL", s)
	}
	return u, nil
}

// parseLevel accepts the Lambda log levels (TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL) in any case, and WARNING.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(s) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "WARN", "WARNING":
		return slog.LevelWarn, nil
	case "ERROR", "FATAL":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q is not one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL", s)
}
