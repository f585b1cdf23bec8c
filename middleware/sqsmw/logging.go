package sqsmw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/herdlock/herdlock/internal/awserr"
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
// usable key: a client's bad input, not the function's fault (the
// function's own are errors: a panicking key function, logged once per
// batch with the panic and its stack). It
// names how many, the first message ids and the first error, truncated;
// never a body or a key, nor the message of an AWS API error.
func (b *batcher) logBadRecords(ctx context.Context, bad []badRecord) {
	for _, r := range bad {
		var kp *keyPanic
		if errors.As(r.err, &kp) {
			b.log.LogAttrs(ctx, slog.LevelError, "sqsmw: the key function panicked; its record is reported failed",
				slog.String("messageId", truncate(r.id, 128)), slog.String("panic", panicText(kp.value)), slog.String("stack", kp.stack))
			break // once per batch: the first
		}
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
		slog.String("error", truncate(errorText(bad[0].err), maxLoggedError)))
}

// errorText is err's text with the messages of its AWS API errors
// withheld, as lockmw's logger writes them: the line carries it as a
// string, cut to size, which the logger no longer sees as an error.
func errorText(err error) string {
	if text, ok := awserr.Redact(err); ok {
		return text
	}
	return err.Error()
}

// logNoTime writes one warning for the batch's turns that could not get
// the minimum key time before the batch's end: their records fail on
// every receive while the function's timeout leaves too little time (or
// the keys before them took it), and no lock attempt says so.
func (bt *batch) logNoTime() {
	bt.mu.Lock()
	keys, records := len(bt.noTime.keys), bt.noTime.records // turns still running may add more
	bt.mu.Unlock()
	if records == 0 {
		return
	}
	bt.b.log.LogAttrs(bt.ctx, slog.LevelWarn, "sqsmw: keys not tried, no time for their minimum before the batch's end; their records are reported failed",
		slog.Int("keys", keys), slog.Int("records", records),
		slog.Duration("minKeyTime", bt.b.o.minKeyTime), slog.Duration("batchMargin", bt.b.o.margin))
}

// logUnfinished writes one warning when the batch answers with records
// not done: their keys' turns are still running (a handler that ignores
// its context) or were not started.
func (bt *batch) logUnfinished() {
	bt.mu.Lock()
	n := 0
	for _, ok := range bt.ok {
		if !ok {
			n++
		}
	}
	bt.mu.Unlock()
	bt.b.log.LogAttrs(bt.ctx, slog.LevelWarn, "sqsmw: the batch answers at its deadline before every key was done; the records not done are reported failed",
		slog.Int("records", n), slog.Duration("batchMargin", bt.b.o.margin))
}

// panicText is a key function's panic value as the log shows it: an
// error's text as [errorText] gives it, truncated as the key errors are,
// since the value may quote the record.
func panicText(v any) string {
	if err, ok := v.(error); ok {
		return truncate(errorText(err), maxLoggedError)
	}
	return truncate(fmt.Sprint(v), maxLoggedError)
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
