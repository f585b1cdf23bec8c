package xraytracer

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"
)

// Setup prepares the process-wide X-Ray SDK for a Lambda function whose
// stdout carries metrics, and returns the tracer to pass to
// lockmw.Telemetry.Tracer. It
//
//   - routes the SDK's log to log (component "xray"), at the SDK's levels
//     mapped to slog's, instead of stdout;
//   - installs a context-missing strategy that logs at debug level instead
//     of panicking, so a call made with a context without a segment is not
//     traced and does no harm. The environment variable
//     AWS_XRAY_CONTEXT_MISSING, when set, still wins, as the SDK documents.
//
// Call it once, from main, before the first invocation: the SDK's
// SetLogger and Configure are not safe for concurrent use with other X-Ray
// calls. A later xray.SetLogger or xray.Configure of the program replaces
// what Setup installed. It returns an error when log is nil or the SDK
// rejects the configuration.
func Setup(log *slog.Logger) (*Tracer, error) {
	if log == nil {
		return nil, fmt.Errorf("xraytracer: nil logger")
	}
	l := logger{log}
	xray.SetLogger(l)
	if err := xray.Configure(xray.Config{ContextMissingStrategy: contextMissing{l}}); err != nil {
		return nil, fmt.Errorf("xraytracer: %w", err)
	}
	return New(), nil
}

// logger is an xraylog.Logger writing to slog.
type logger struct{ l *slog.Logger }

func (x logger) Log(level xraylog.LogLevel, msg fmt.Stringer) {
	var lv slog.Level
	switch level {
	case xraylog.LogLevelDebug:
		lv = slog.LevelDebug
	case xraylog.LogLevelInfo:
		lv = slog.LevelInfo
	case xraylog.LogLevelWarn:
		lv = slog.LevelWarn
	default:
		lv = slog.LevelError
	}
	ctx := context.Background()
	if x.l.Enabled(ctx, lv) {
		x.l.Log(ctx, lv, msg.String(), slog.String("component", "xray"))
	}
}

// contextMissing is an X-Ray context-missing strategy that logs at debug
// level instead of panicking.
type contextMissing struct{ l logger }

func (c contextMissing) ContextMissing(v any) {
	c.l.Log(xraylog.LogLevelDebug, stringer(fmt.Sprint(v)))
}

type stringer string

func (s stringer) String() string { return string(s) }
