package lockmw

import (
	"context"
	"errors"
	"fmt"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/internal/answernote"
)

// Metrics of the inline answers.
const (
	// metricAnswerBytes (Bytes) is the size of the answer a holder
	// published inline, as stored in the lock item.
	metricAnswerBytes = "LockAnswerBytes"
	// metricAnswerNotInline (Count, 1) is a holder whose answer could not
	// be published inline (too large, or not encodable): it released with
	// success and the reference only.
	metricAnswerNotInline = "LockAnswerNotInline"
)

// maxInlineAnswer is the largest Answers.MaxInlineBytes: what lockcore stores.
const maxInlineAnswer = lockcore.MaxAnswerBytes

// checkCodec reports whether the inline answers can work: the codec is
// only for them, and the default JSON codec must be able to encode the
// result type at all (a channel, a function or a complex number cannot).
func checkCodec[TIn, TOut any](hs *Handlers[TIn, TOut]) error {
	if hs.OnReleased != nil {
		if hs.Codec != nil {
			return errors.New("Codec is for inline answers, which a read handler (OnReleased) replaces: give one of them")
		}
		return nil
	}
	if hs.Codec != nil {
		return nil
	}
	var zero TOut
	if _, err := (JSONCodec[TOut]{}).Encode(zero); err != nil {
		return fmt.Errorf("the result type %T cannot be encoded as JSON for inline answers (%w): give a read handler (OnReleased) or a Codec", zero, err)
	}
	return nil
}

// answerOption returns the release option that publishes out inline, or
// none when the wrapper uses a read handler or out cannot be published
// (then c.answerErr says why).
func (w *wrapper[TIn, TOut]) answerOption(c *call, out TOut) []lockcore.ReleaseOption {
	if w.codec == nil {
		return nil
	}
	stored, err := encodeAnswer(w.codec, out)
	if err == nil && len(stored) > w.maxAnswer {
		stored, err = w.byReference(c, stored)
	}
	if err != nil {
		c.answerErr = err
		answernote.NotPublished(c.tctx, err)
		c.rec.AddMetric(metricAnswerNotInline, "Count", 1)
		return nil
	}
	c.answer = stored
	c.rec.AddMetric(metricAnswerBytes, "Bytes", float64(len(stored)))
	return []lockcore.ReleaseOption{lockcore.WithAnswer(stored)}
}

// inlineAnswer decodes the answer the holder published with its success,
// reading it from the answer store when the item carries a reference.
func (w *wrapper[TIn, TOut]) inlineAnswer(ctx context.Context, res lockcore.WaitResult) (TOut, error) {
	var zero TOut
	if len(res.Answer) == 0 {
		return zero, fmt.Errorf("%w: the holder with fence %d published success without one (too large or not encodable; its log line says which)", ErrNoAnswer, res.Fence)
	}
	stored, err := w.dereference(ctx, res.Answer)
	if err != nil {
		return zero, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	out, err := decodeAnswer(w.codec, stored)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	return out, nil
}
