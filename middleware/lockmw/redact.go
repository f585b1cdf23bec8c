package lockmw

import (
	"context"
	"log/slog"

	"github.com/herdlock/herdlock/internal/awserr"
)

// redactHandler is the slog.Handler under the middleware's logger (and
// lockcore's, which is derived from it): an error attribute whose tree
// holds AWS API errors (smithy.APIError), wrapped or joined, also in a
// group or a value that resolves to one, is written with their messages
// withheld and their codes kept. A store's message can name the
// account, the role and the table (AccessDeniedException,
// ResourceNotFoundException); the code says what went wrong.
type redactHandler struct{ h slog.Handler }

// redacting returns l writing through a redactHandler.
func redacting(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*redactHandler); ok {
		return l
	}
	return slog.New(&redactHandler{h: l.Handler()})
}

func (r *redactHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return r.h.Enabled(ctx, level)
}

func (r *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	clean := true
	rec.Attrs(func(a slog.Attr) bool {
		clean = !needsRedaction(a)
		return clean
	})
	if clean {
		return r.h.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, rec.Message, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return &redactHandler{h: r.h.WithAttrs(clean)}
}

func (r *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{h: r.h.WithGroup(name)}
}

// redacted returns the text of a's error with the messages of the AWS
// API errors in its tree withheld, or false when a is no such error.
func redacted(a slog.Attr) (string, bool) {
	err, ok := a.Value.Resolve().Any().(error)
	if !ok {
		return "", false
	}
	return awserr.Redact(err)
}

func needsRedaction(a slog.Attr) bool {
	if v := a.Value.Resolve(); v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			if needsRedaction(g) {
				return true
			}
		}
		return false
	}
	_, ok := redacted(a)
	return ok
}

func redactAttr(a slog.Attr) slog.Attr {
	if v := a.Value.Resolve(); v.Kind() == slog.KindGroup {
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = redactAttr(x)
		}
		return slog.Group(a.Key, clean...)
	}
	text, ok := redacted(a)
	if !ok {
		return a
	}
	return slog.String(a.Key, text)
}
