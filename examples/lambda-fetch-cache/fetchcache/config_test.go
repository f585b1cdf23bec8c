package fetchcache

import (
	"cmp"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func validEnv() map[string]string {
	return map[string]string{
		EnvLockTable:        "locks",
		EnvCacheTable:       "cache",
		EnvUpstreamURL:      "https://api.example.com/v1/rates",
		EnvServiceName:      "fx",
		EnvMetricsNamespace: "herdlock",
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(env(validEnv()))
	if err != nil {
		t.Fatalf("LoadConfig() = %v", err)
	}
	if c.CacheTTL != defaultCacheTTL || c.LockGroup != defaultLockGroup || c.LogLevel != slog.LevelInfo || c.DynamoDBEndpoint != "" || c.AnswerMode != AnswerCache {
		t.Errorf("LoadConfig() = %+v, want the defaults", c)
	}
	if c.UpstreamURL.String() != "https://api.example.com/v1/rates" {
		t.Errorf("UpstreamURL = %v", c.UpstreamURL)
	}
}

func TestLoadConfigOptional(t *testing.T) {
	m := validEnv()
	m[EnvCacheTTL] = "90s"
	m[EnvLogLevel] = "debug"
	m[EnvLambdaLogLevel] = "WARN"
	m[EnvLockGroup] = "fx-rates"
	m[EnvDynamoDBEndpoint] = "http://127.0.0.1:4567"
	c, err := LoadConfig(env(m))
	if err != nil {
		t.Fatalf("LoadConfig() = %v", err)
	}
	if c.CacheTTL != 90*time.Second || c.LogLevel != slog.LevelWarn || c.LockGroup != "fx-rates" || c.DynamoDBEndpoint != "http://127.0.0.1:4567" {
		t.Errorf("LoadConfig() = %+v", c)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		key  string
		val  string
		want string
	}{
		{"missing lock table", EnvLockTable, "", "LOCK_TABLE is required"},
		{"missing cache table", EnvCacheTable, "", "CACHE_TABLE is required"},
		{"missing upstream", EnvUpstreamURL, " ", "UPSTREAM_URL is required"},
		{"missing service", EnvServiceName, "", "POWERTOOLS_SERVICE_NAME is required"},
		{"missing namespace", EnvMetricsNamespace, "", "POWERTOOLS_METRICS_NAMESPACE is required"},
		{"relative upstream", EnvUpstreamURL, "/rates", "UPSTREAM_URL: \"/rates\" is not an absolute"},
		{"ftp upstream", EnvUpstreamURL, "ftp://x/y", "UPSTREAM_URL"},
		{"bad ttl", EnvCacheTTL, "five minutes", "CACHE_TTL: \"five minutes\" is not a duration"},
		{"negative ttl", EnvCacheTTL, "-1s", "CACHE_TTL: must be positive"},
		{"bad level", EnvLogLevel, "LOUD", "LOG_LEVEL: \"LOUD\" is not one of"},
		{"bad lambda level", EnvLambdaLogLevel, "x", "AWS_LAMBDA_LOG_LEVEL"},
		{"bad endpoint", EnvDynamoDBEndpoint, "localhost:8000", "DYNAMODB_ENDPOINT"},
		{"bad tracing", EnvTracing, "jaeger", "TRACING: \"jaeger\" is not one of xray, otel, off"},
		{"bad answer mode", EnvAnswerMode, "item", `ANSWER_MODE: "item" is not cache or inline`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validEnv()
			m[tt.key] = tt.val
			_, err := LoadConfig(env(m))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadConfig() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadConfigAnswerMode(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		cacheTable string
		want       string // "" when valid
	}{
		{"cache", "cache", "cache", ""},
		{"cache by default", "", "cache", ""},
		{"cache without a table", "cache", "", "CACHE_TABLE is required"},
		{"inline", "inline", "", ""},
		{"inline with a table", "inline", "cache", ""},
		{"wrong case", "Inline", "", `"Inline" is not cache or inline`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validEnv()
			m[EnvAnswerMode], m[EnvCacheTable] = tt.mode, tt.cacheTable
			c, err := LoadConfig(env(m))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("LoadConfig() = %v, want nil", err)
			case tt.want == "" && c.AnswerMode != cmp.Or(tt.mode, AnswerCache):
				t.Errorf("AnswerMode = %q, want %q", c.AnswerMode, cmp.Or(tt.mode, AnswerCache))
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("LoadConfig() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadConfigNamesEveryMissingVariable(t *testing.T) {
	_, err := LoadConfig(env(nil))
	if err == nil {
		t.Fatal("LoadConfig(empty) = nil error")
	}
	for _, k := range RequiredEnv {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("LoadConfig(empty) = %v, want it to name %s", err, k)
		}
	}
}

func TestLoadConfigTracing(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"default in Lambda", nil, TracingXRay},
		{"default in a local run", map[string]string{EnvDynamoDBEndpoint: "http://127.0.0.1:4567"}, TracingOff},
		{"otel", map[string]string{EnvTracing: "OTel"}, TracingOTel},
		{"otel with an endpoint", map[string]string{EnvTracing: "otel", EnvOTLPEndpoint: "http://127.0.0.1:4318"}, TracingOTel},
		{"otel with a traces endpoint and protocol", map[string]string{EnvTracing: "otel",
			EnvOTLPTracesEndpoint: "https://collector:4318/v1/traces", EnvOTLPProtocol: "http/protobuf"}, TracingOTel},
		{"off", map[string]string{EnvTracing: "off"}, TracingOff},
		{"the OTLP variables matter only with otel", map[string]string{EnvTracing: "xray", EnvOTLPProtocol: "grpc"}, TracingXRay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validEnv()
			for k, v := range tt.set {
				m[k] = v
			}
			if c, err := LoadConfig(env(m)); err != nil || c.Tracing != tt.want {
				t.Errorf("LoadConfig() tracing = %q, %v; want %q, nil", c.Tracing, err, tt.want)
			}
		})
	}
}

func TestLoadConfigTracingErrors(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"otel with a bad endpoint", map[string]string{EnvTracing: "otel", EnvOTLPEndpoint: "localhost:4318"},
			"OTEL_EXPORTER_OTLP_ENDPOINT: \"localhost:4318\" is not an absolute"},
		{"otel with a bad traces endpoint", map[string]string{EnvTracing: "otel", EnvOTLPTracesEndpoint: "/v1/traces"},
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"otel over grpc", map[string]string{EnvTracing: "otel", EnvOTLPTracesProtocol: "grpc"},
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: \"grpc\": this function exports OTLP over HTTP only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validEnv()
			for k, v := range tt.set {
				m[k] = v
			}
			if _, err := LoadConfig(env(m)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadConfig() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
