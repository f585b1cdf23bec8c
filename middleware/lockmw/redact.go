package lockmw

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/aws/smithy-go"
)

// withheld replaces the message of an AWS API error in a log line.
const withheld = "(message withheld)"

// redactHandler is the slog.Handler under the middleware's logger (and
// lockcore's, which is derived from it): an error attribute whose chain
// holds an AWS API error (smithy.APIError) is written with that error's
// message withheld and its code kept. A store's message can name the
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

// apiMessage returns the message of the AWS API error in a's chain, or "".
func apiMessage(a slog.Attr) string {
	err, ok := a.Value.Resolve().Any().(error)
	if !ok {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return ""
}

func needsRedaction(a slog.Attr) bool {
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			if needsRedaction(g) {
				return true
			}
		}
		return false
	}
	return apiMessage(a) != ""
}

func redactAttr(a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindGroup {
		g := a.Value.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = redactAttr(x)
		}
		return slog.Group(a.Key, clean...)
	}
	msg := apiMessage(a)
	if msg == "" {
		return a
	}
	return slog.String(a.Key, strings.ReplaceAll(a.Value.Resolve().Any().(error).Error(), msg, withheld))
}
