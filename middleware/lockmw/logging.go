package lockmw

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/lmittmann/tint"
)

// defaultLogger is the logger of [WithLogger]'s default: JSON at
// AWS_LAMBDA_LOG_LEVEL inside Lambda, tint on a terminal, text otherwise,
// always on stderr (stdout carries only metrics).
func defaultLogger() *slog.Logger {
	if inLambda() {
		return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lambdaLevel(os.Getenv("AWS_LAMBDA_LOG_LEVEL"))}))
	}
	if isTerminal(os.Stderr) {
		return slog.New(tint.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}

// lambdaLevel maps Lambda's application log levels (TRACE, DEBUG, INFO,
// WARN, ERROR, FATAL) to slog levels; unknown or empty means INFO.
func lambdaLevel(s string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE":
		return slog.LevelDebug - 4
	case "DEBUG":
		return slog.LevelDebug
	case "WARN", "WARNING":
		return slog.LevelWarn
	case "ERROR":
		return slog.LevelError
	case "FATAL":
		return slog.LevelError + 4
	default:
		return slog.LevelInfo
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// lazyAttrs is a slog.Handler that keeps the attributes of With calls and
// adds them to a record only when one is handled, so the per-invocation
// loggers cost nothing unless something is logged (slog's built-in
// handlers format the attributes at With time).
type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
}

// withLazy returns l with attrs added lazily.
func withLazy(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	if la, ok := l.Handler().(*lazyAttrs); ok {
		return slog.New(&lazyAttrs{h: la.h, attrs: append(la.attrs[:len(la.attrs):len(la.attrs)], attrs...)})
	}
	return slog.New(&lazyAttrs{h: l.Handler(), attrs: attrs})
}

func (l *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	if len(l.attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(l.attrs...)
	}
	return l.h.Handle(ctx, r)
}

func (l *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lazyAttrs{h: l.h, attrs: append(l.attrs[:len(l.attrs):len(l.attrs)], attrs...)}
}

func (l *lazyAttrs) WithGroup(name string) slog.Handler {
	return l.h.WithAttrs(l.attrs).WithGroup(name)
}
