package lockmw

import (
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
		return slog.New(tint.NewHandler(os.Stderr, nil))
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
