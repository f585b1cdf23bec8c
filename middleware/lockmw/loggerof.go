package lockmw

import "log/slog"

// LoggerOf returns the logger that opts set with [WithLogger], or a new
// default logger (see WithLogger) when they set none: for a front door
// built on this package that writes its own lines, such as a batch's
// malformed records, where the invocations' lines go. It is safe for
// concurrent use.
func LoggerOf(opts ...Option) *slog.Logger {
	return redacting(loggerOf(opts))
}
