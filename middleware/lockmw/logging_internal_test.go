package lockmw

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLogLevelPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		want       slog.Level
		wantSource string
	}{
		{"none", nil, slog.LevelInfo, ""},
		{"LOG_LEVEL", map[string]string{envLogLevel: "debug"}, slog.LevelDebug, envLogLevel},
		{"Powertools over LOG_LEVEL", map[string]string{envLogLevel: "DEBUG", envPowertoolsLogLevel: "ERROR"}, slog.LevelError, envPowertoolsLogLevel},
		{"Lambda over Powertools", map[string]string{envPowertoolsLogLevel: "ERROR", envLambdaLogLevel: "TRACE"}, levelTrace, envLambdaLogLevel},
		{"blank is unset", map[string]string{envLambdaLogLevel: " ", envPowertoolsLogLevel: "warn"}, slog.LevelWarn, envPowertoolsLogLevel},
		{"Powertools CRITICAL", map[string]string{envPowertoolsLogLevel: "CRITICAL"}, levelFatal, envPowertoolsLogLevel},
		{"unknown is INFO", map[string]string{envLogLevel: "loud"}, slog.LevelInfo, envLogLevel},
	}
	for _, tt := range tests {
		got, src := logLevel(envOf(tt.env))
		if got != tt.want || src != tt.wantSource {
			t.Errorf("logLevel(%s) = %v, %q; want %v, %q", tt.name, got, src, tt.want, tt.wantSource)
		}
	}
}

// TestDefaultLoggerLevelNames checks that the default logger in Lambda
// writes TRACE and FATAL, which Lambda's filter understands, not slog's
// DEBUG-4 and ERROR+4, and filters by the level from the environment.
func TestDefaultLoggerLevelNames(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, envOf(map[string]string{envFunctionName: "fn", envPowertoolsLogLevel: "TRACE"}), false)
	ctx := context.Background()
	log.Log(ctx, levelTrace-1, "below trace")
	log.Log(ctx, levelTrace, "trace")
	log.Debug("debug")
	log.Warn("warn")
	log.Log(ctx, levelFatal, "fatal")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, rec.Level+":"+rec.Msg)
	}
	want := "TRACE:trace DEBUG:debug WARN:warn FATAL:fatal"
	if strings.Join(got, " ") != want {
		t.Errorf("levels written = %v, want %s", got, want)
	}

	buf.Reset()
	log = newLogger(&buf, envOf(map[string]string{envLambdaLogLevel: "ERROR", envLogLevel: "DEBUG"}), false)
	log.Warn("dropped")
	log.Log(ctx, levelFatal, "kept")
	if out := buf.String(); strings.Contains(out, "dropped") || !strings.Contains(out, "level=FATAL") {
		t.Errorf("text logger at ERROR wrote %q, want only the FATAL line", out)
	}
}

func TestWarnFilteredMetrics(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want int
	}{
		{"outside Lambda", map[string]string{envLambdaLogLevel: "ERROR"}, 0},
		{"INFO", map[string]string{envFunctionName: "fn", envLambdaLogLevel: "INFO"}, 0},
		{"DEBUG", map[string]string{envFunctionName: "fn", envLambdaLogLevel: "debug"}, 0},
		{"unset", map[string]string{envFunctionName: "fn", envPowertoolsLogLevel: "ERROR"}, 0},
		{"WARN", map[string]string{envFunctionName: "fn", envLambdaLogLevel: "WARN"}, 1},
		{"FATAL", map[string]string{envFunctionName: "fn", envLambdaLogLevel: "fatal"}, 1},
		{"ERROR, metrics off", map[string]string{envFunctionName: "fn", envLambdaLogLevel: "ERROR", "POWERTOOLS_METRICS_DISABLED": "true"}, 0},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		warnFilteredMetrics(slog.New(slog.NewJSONHandler(&buf, nil)), envOf(tt.env))
		if got := strings.Count(buf.String(), "drops the embedded metrics"); got != tt.want {
			t.Errorf("warnFilteredMetrics(%s) warned %d times, want %d: %s", tt.name, got, tt.want, buf.String())
		}
	}
}
