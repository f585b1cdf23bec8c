package lockmw

import (
	"context"
	"log/slog"

	"github.com/herdlock/herdlock/emf"
)

// telemetry is what a wrapped handler's context carries for [Metrics] and
// [Logger]: the invocation's own metrics batch and logger.
type telemetry struct {
	metrics *emf.Batch
	log     *slog.Logger
}

type telemetryKey struct{}

func withTelemetry(ctx context.Context, t *telemetry) context.Context {
	return context.WithValue(ctx, telemetryKey{}, t)
}

// Metrics returns the metrics batch of the invocation whose handler got
// ctx: what the handler adds to it goes out in that invocation's one
// metrics document, with the lock's metrics and the request id, and in no
// other invocation's, however many run at once in the process. It returns
// nil when ctx does not come from a handler wrapped by this package; a nil
// *emf.Batch records nothing. It is safe for concurrent use.
//
//	lockmw.Metrics(ctx).Add("UpstreamFetch", emf.Count, 1)
func Metrics(ctx context.Context) *emf.Batch {
	if t, ok := ctx.Value(telemetryKey{}).(*telemetry); ok {
		return t.metrics
	}
	return nil
}

// Logger returns the logger of the invocation whose handler got ctx: the
// middleware's logger ([Telemetry].Logger) with the request id, lock group and
// lock id as attributes, so that the handler's lines can be told apart
// from those of the other invocations running in the process. It returns
// slog.Default() when ctx does not come from a handler wrapped by this
// package. It is safe for concurrent use.
func Logger(ctx context.Context) *slog.Logger {
	if t, ok := ctx.Value(telemetryKey{}).(*telemetry); ok {
		return t.log
	}
	return slog.Default()
}
