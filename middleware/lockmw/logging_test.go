package lockmw_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestNewWarnsWhenLambdaDropsMetrics checks the one warning at set-up when
// Lambda's log level would drop the embedded metric lines.
func TestNewWarnsWhenLambdaDropsMetrics(t *testing.T) {
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "fn")
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "WARN")
	t.Setenv("POWERTOOLS_METRICS_NAMESPACE", "test")
	var buf bytes.Buffer
	h := func(context.Context, string) (string, error) { return "", nil }
	_, err := lockmw.New(h, lockcore.NewMemoryStore(), lockmw.StaticKey[string]("k"),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &bytes.Buffer{}}))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `"level":"WARN"`); n != 1 || !strings.Contains(buf.String(), "ApplicationLogLevel") {
		t.Errorf("New() logged %q, want one warning naming ApplicationLogLevel", buf.String())
	}

	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "INFO")
	buf.Reset()
	if _, err := lockmw.New(h, lockcore.NewMemoryStore(), lockmw.StaticKey[string]("k"),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &bytes.Buffer{}})); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("New() at INFO logged %q, want nothing", buf.String())
	}
}
