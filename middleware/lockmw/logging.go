package lockmw

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/lmittmann/tint"

	"github.com/herdlock/herdlock/emf"
)

// Environment variables of the default logger's level, in precedence
// order: Lambda's own (set from the function's LoggingConfig when the log
// format is JSON), then Powertools', then the generic one.
const (
	envLambdaLogLevel     = "AWS_LAMBDA_LOG_LEVEL"
	envPowertoolsLogLevel = "POWERTOOLS_LOG_LEVEL"
	envLogLevel           = "LOG_LEVEL"
)

// levelTrace and levelFatal are the slog levels of Lambda's TRACE and FATAL
// application log levels. The default logger writes them with those names,
// which Lambda's log-level filter understands (slog's own names for them
// would be DEBUG-4 and ERROR+4). docs/operations.md lists them, with the
// metric names, the outcome NOT_TRIED and the reasons (a test ties its
// lists to the values).
const (
	levelTrace = slog.LevelDebug - 4
	levelFatal = slog.LevelError + 4
)

// defaultLogger is the default of [Telemetry].Logger: JSON inside
// Lambda, tint on a terminal, text otherwise, always on stderr (stdout
// carries only metrics), at the level of [logLevel], with Lambda's level
// names.
func defaultLogger() *slog.Logger {
	return newLogger(os.Stderr, os.Getenv, isTerminal(os.Stderr))
}

func newLogger(w io.Writer, getenv func(string) string, terminal bool) *slog.Logger {
	level, _ := logLevel(getenv)
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: lambdaLevelNames}
	switch {
	case getenv(envFunctionName) != "":
		return slog.New(slog.NewJSONHandler(w, opts))
	case terminal:
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, ReplaceAttr: lambdaLevelNames}))
	default:
		return slog.New(slog.NewTextHandler(w, opts))
	}
}

// logLevel returns the level of the first of AWS_LAMBDA_LOG_LEVEL,
// POWERTOOLS_LOG_LEVEL and LOG_LEVEL that is set, and that variable's name;
// INFO and "" when none is.
func logLevel(getenv func(string) string) (slog.Level, string) {
	for _, k := range []string{envLambdaLogLevel, envPowertoolsLogLevel, envLogLevel} {
		if s := strings.TrimSpace(getenv(k)); s != "" {
			return lambdaLevel(s), k
		}
	}
	return slog.LevelInfo, ""
}

// lambdaLevel maps Lambda's application log levels (TRACE, DEBUG, INFO,
// WARN, ERROR, FATAL; any case) to slog levels; unknown or empty means
// INFO.
func lambdaLevel(s string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE":
		return levelTrace
	case "DEBUG":
		return slog.LevelDebug
	case "WARN", "WARNING":
		return slog.LevelWarn
	case "ERROR":
		return slog.LevelError
	case "FATAL", "CRITICAL":
		return levelFatal
	default:
		return slog.LevelInfo
	}
}

// lambdaLevelNames is a slog ReplaceAttr that writes the level with the
// names Lambda filters by: TRACE below DEBUG, FATAL above ERROR.
func lambdaLevelNames(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 || a.Key != slog.LevelKey {
		return a
	}
	if l, ok := a.Value.Any().(slog.Level); ok {
		switch {
		case l < slog.LevelDebug:
			a.Value = slog.StringValue("TRACE")
		case l > slog.LevelError:
			a.Value = slog.StringValue("FATAL")
		}
	}
	return a
}

// warnFilteredMetrics logs one warning when Lambda's log level is above
// INFO: Lambda, with JSON logs, treats a line without a level (every
// embedded metric line on stdout) as INFO, and drops it at WARN, ERROR or
// FATAL, so the metrics would never reach CloudWatch.
func warnFilteredMetrics(log *slog.Logger, getenv func(string) string) {
	if getenv(envFunctionName) == "" {
		return
	}
	if off, err := strconv.ParseBool(strings.TrimSpace(getenv(emf.EnvDisabled))); err == nil && off {
		return
	}
	s := strings.TrimSpace(getenv(envLambdaLogLevel))
	if s == "" || lambdaLevel(s) <= slog.LevelInfo {
		return
	}
	log.Warn("the Lambda log level drops the embedded metrics: set the function's ApplicationLogLevel to INFO or below",
		slog.String("lambdaLogLevel", strings.ToUpper(s)))
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
