package lockmw

import "log/slog"

// LoggerOf returns the logger that opts set with [Telemetry].Logger, or a
// new default logger (see Telemetry.Logger) when they set none: for a front door
// built on this package that writes its own lines, such as a batch's
// malformed records, where the invocations' lines go. Like the
// middleware's own logger, it withholds the messages of the AWS API errors
// in an error attribute and keeps their codes; an error already turned
// into a string is not one. It is safe for concurrent use.
func LoggerOf(opts ...Option) *slog.Logger {
	return redacting(loggerOf(opts))
}
