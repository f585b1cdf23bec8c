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
	EnvDynamoDBEndpoint = "DYNAMODB_ENDPOINT" // local runs only: dynalite
)

// AllEnv lists every variable LoadConfig reads.
var AllEnv = []string{
	EnvLockTable, EnvCacheTable, EnvUpstreamURL, EnvServiceName, EnvMetricsNamespace,
	EnvLogLevel, EnvLambdaLogLevel, EnvCacheTTL, EnvLockGroup, EnvDynamoDBEndpoint,
}

// RequiredEnv lists the variables without a default.
var RequiredEnv = []string{EnvLockTable, EnvCacheTable, EnvUpstreamURL, EnvServiceName, EnvMetricsNamespace}

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
	DynamoDBEndpoint string // empty: the regional AWS endpoint
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
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("lambda-fetch-cache: configuration: %w", errors.Join(errs...))
	}
	return c, nil
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
