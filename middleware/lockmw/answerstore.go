package lockmw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// AnswerStore keeps the answers too large for the lock item (see
// [Answers].Store): an S3 bucket (the module
// github.com/herdlock/herdlock/middleware/lockmw/s3answers is one), a
// table of its own. Its methods must be safe for concurrent use.
type AnswerStore interface {
	// PutAnswer stores data under ref. Each published answer has a ref of
	// its own, never written twice; the store may expire it once the
	// fresh-success window (lockcore.WithFreshSuccess) is over.
	PutAnswer(ctx context.Context, ref string, data []byte) error
	// GetAnswer returns what PutAnswer stored under ref, and an error when
	// it cannot.
	GetAnswer(ctx context.Context, ref string) ([]byte, error)
}

// Answers are the limits of the inline answers (see [Handlers].OnReleased
// and [WithAnswers]). A zero field keeps its default.
type Answers struct {
	// MaxInlineBytes is the largest answer a holder publishes inline, as
	// stored in the lock item: encoded, compressed when that is smaller,
	// plus one format byte. Default 64 KiB; at most lockcore.MaxAnswerBytes.
	// A larger answer goes by reference to Store; without one it is not
	// published: the holder releases with success and the reference only,
	// says so in its log line at Error level, and waiters without a read
	// handler get an error matching [ErrNoAnswer].
	MaxInlineBytes int

	// Store carries the answers over MaxInlineBytes by reference: the
	// holder puts the stored answer in it under a ref of its own before
	// its release, and the lock item carries only the ref and the answer's
	// SHA-256, which a waiter checks on what it reads back. Answers up to
	// 32 MiB go by reference. A put ends with the hold, a read a quarter of
	// the safety margin before the invocation's deadline: a store that
	// hangs does not make the invocation time out. Default: none.
	Store AnswerStore
}

// WithAnswers sets the limits of the inline answers (see [Answers]). Only
// with inline answers: with a Handlers.OnReleased it is a configuration
// error. Default: the zero Answers, every field's default.
func WithAnswers(a Answers) Option {
	return func(o *options) {
		if a.MaxInlineBytes != 0 {
			o.answers.MaxInlineBytes = a.MaxInlineBytes
		}
		if a.Store != nil {
			o.answers.Store = a.Store
		}
	}
}

// errAnswerStore: the answer store refused a holder's answer.
var errAnswerStore = errors.New("lockmw: answer store")

// byReference puts the stored answer in the answer store, within ctx,
// and returns the reference the lock item carries instead: the format
// byte, the answer's SHA-256 and the ref.
func (w *wrapper[TIn, TOut]) byReference(ctx context.Context, c *call, stored []byte) ([]byte, error) {
	if w.answers == nil || len(stored) > maxDecodedAnswer {
		limit := "no Answers.Store to carry it by reference"
		if w.answers != nil {
			limit = "over what goes by reference (" + strconv.Itoa(maxDecodedAnswer) + ")"
		}
		return nil, fmt.Errorf("%w: %d bytes stored, Answers.MaxInlineBytes %d, %s", errAnswerTooLarge, len(stored), w.maxAnswer, limit)
	}
	key := sha256.Sum256([]byte(c.info.Key.Group + "\x00" + c.info.Key.ID))
	ref := "herdlock-answer/" + hex.EncodeToString(key[:16]) + "/" + strconv.FormatInt(c.info.Fence, 10) + "-" + c.info.Revision
	if err := w.answers.PutAnswer(ctx, ref, stored); err != nil {
		return nil, fmt.Errorf("%w: put: %w", errAnswerStore, err)
	}
	sum := sha256.Sum256(stored)
	ptr := make([]byte, 0, 1+len(sum)+len(ref))
	ptr = append(append(append(ptr, answerRef), sum[:]...), ref...)
	return ptr, nil
}

// dereference returns the stored answer an item's answer names: itself,
// or what the answer store holds under its reference, checked against its
// SHA-256.
func (w *wrapper[TIn, TOut]) dereference(ctx context.Context, published []byte) ([]byte, error) {
	if len(published) == 0 || published[0] != answerRef {
		return published, nil
	}
	if len(published) <= 1+sha256.Size {
		return nil, errors.New("malformed answer reference")
	}
	if w.answers == nil {
		return nil, errors.New("the answer is published by reference and there is no Answers.Store to read it")
	}
	sum, ref := published[1:1+sha256.Size], string(published[1+sha256.Size:])
	stored, err := w.answers.GetAnswer(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("answer store: get: %w", err)
	}
	if got := sha256.Sum256(stored); !bytes.Equal(got[:], sum) {
		return nil, errors.New("the answer store holds other bytes under the reference")
	}
	if len(stored) > 0 && stored[0] == answerRef {
		return nil, errors.New("a reference to a reference")
	}
	return stored, nil
}
