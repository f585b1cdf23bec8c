package sqsmw

import (
	"context"
	"log/slog"
	"unicode/utf8"
)

// Limits of the bad-record log line: a batch of malformed records logs
// one line, not one per record, and no key function's error text beyond
// maxLoggedError bytes.
const (
	maxLoggedIDs   = 10
	maxLoggedError = 256
)

// badRecord is a record with no usable key, and why.
type badRecord struct {
	id  string
	err error
}

// logBadRecords writes one warning for the batch's records with no
// usable key: a client's bad input, not the function's fault (a nil key
// function is the function's: an error, logged once). It names
// how many, the first message ids and the first error, truncated; never
// a body or a key.
func (b *batcher) logBadRecords(ctx context.Context, bad []badRecord) {
	if b.key == nil {
		b.nilKeyOnce.Do(func() {
			b.log.ErrorContext(ctx, "sqsmw: invalid configuration; every record fails", slog.Any("error", errNilKey))
		})
		return
	}
	if len(bad) == 0 || !b.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	ids := make([]string, 0, min(len(bad), maxLoggedIDs))
	for _, r := range bad[:min(len(bad), maxLoggedIDs)] {
		ids = append(ids, truncate(r.id, 128))
	}
	b.log.LogAttrs(ctx, slog.LevelWarn, "sqsmw: records without a usable key are reported failed",
		slog.Int("records", len(bad)), slog.Any("messageIds", ids),
		slog.String("error", truncate(bad[0].err.Error(), maxLoggedError)))
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
