package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herdlock/herdlock/internal/waitoutcome"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/internal/answernote"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// maxEventKeyBytes is the longest key a key function may return: well
// inside DynamoDB's partition key with the prefix and the lock group.
const maxEventKeyBytes = 1024

// recordTTLAfterExpiry is how long after its expiry DynamoDB's TTL may
// delete a record: clean-up only, never what decides a replay.
const recordTTLAfterExpiry = 24 * time.Hour

// Wrap returns the operation hs made idempotent on store, in the shape
// that lambda.Start accepts:
//
//	lambda.Start(idempotency.Wrap(idempotency.Handlers[Order, Receipt]{Handle: charge, Key: orderID}, store))
//
// Per invocation it takes the key from the event (hs.Key) and the
// fingerprint of its payload (hs.Payload), and then, through lockmw, the
// record's lock (lockcore.TryAcquireElseWaitForRelease on "prefix#key"):
//
//   - no record, or an expired one, or one whose holder failed: hs.Handle
//     runs, holding the record; its answer is stored with the
//     fingerprint when it returns a nil error, and its error is not
//     kept (unless [Retention].Errors);
//   - a completed record less than [Retention].Answers old: its answer is
//     replayed, if the fingerprints match ([ErrPayloadMismatch] if not),
//     without running hs.Handle;
//   - a record in progress: the invocation waits for its answer, within
//     its own deadline less lockmw's safety margin, and replays it; when
//     the wait cannot finish, it fails with [ErrInProgress]. A holder
//     that stopped (a crash, a timeout) holds the record only until its
//     lease lapses or its maximum hold, its invocation's deadline, ends;
//     then one waiting duplicate takes it over.
//
// With [WithCache], a completed answer of this process is replayed from
// memory, checked the same way. Store and lockmw errors are returned as
// lockmw returns them (matching lockmw.ErrLockFailed and so on).
//
// Wrap never panics on a bad configuration: the returned handler returns
// the error, matching lockcore.ErrConfig, on every call. Use [New] to get the
// error instead. The returned handler is safe for concurrent use.
func Wrap[TIn, TOut any](hs Handlers[TIn, TOut], store storeapi.Store, opts ...Option) func(context.Context, TIn) (TOut, error) {
	f, err := New(hs, store, opts...)
	if err == nil {
		return f
	}
	log := configLogger(opts)
	var once sync.Once
	return func(ctx context.Context, _ TIn) (TOut, error) {
		once.Do(func() {
			log.ErrorContext(ctx, "idempotency: invalid configuration; every invocation fails", slog.Any("error", err))
		})
		var zero TOut
		return zero, err
	}
}

// configLogger is where the invocations' lines of opts go, for the line
// of a configuration error: the logger of the lockmw options in opts.
func configLogger(opts []Option) *slog.Logger {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return lockmw.LoggerOf(o.lockmwOpts...)
}

// New is [Wrap], but returns the configuration error, which matches
// lockcore.ErrConfig and names every problem found, instead of a handler that
// returns it.
func New[TIn, TOut any](hs Handlers[TIn, TOut], store storeapi.Store, opts ...Option) (func(context.Context, TIn) (TOut, error), error) {
	w, err := newWrapper(hs, store, opts)
	if err != nil {
		return nil, err
	}
	return w.invoke, nil
}

// wrapper is one idempotent operation: read-only after newWrapper.
type wrapper[TIn, TOut any] struct {
	op     uint64 // this operation's number in the process, for the cache
	hs     Handlers[TIn, TOut]
	o      options
	codec  recordCodec[TOut]
	locked func(context.Context, request[TIn]) (record[TOut], error) // through lockmw
}

// request is the event of one record lock: the invocation's event, key
// and fingerprint, and where the holder notes that its handler ran.
type request[TIn any] struct {
	event TIn
	key   string
	id    string // prefix#key
	fp    string
	held  *held
}

// held is what the holder's run leaves for its invocation.
type held struct {
	ran bool
	ctx context.Context // the lock's holder context
}

func newWrapper[TIn, TOut any](hs Handlers[TIn, TOut], store storeapi.Store, opts []Option) (*wrapper[TIn, TOut], error) {
	o, err := collect(opts)
	if err != nil {
		return nil, err
	}
	if err := hs.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", errConfig)
	}
	w := &wrapper[TIn, TOut]{op: operations.Add(1), hs: hs, o: o}
	inner := hs.Codec
	if inner == nil {
		inner = lockmw.JSONCodec[TOut]{}
	}
	w.codec = recordCodec[TOut]{inner: inner}
	locked, err := lockmw.NewHandlers(lockmw.Handlers[request[TIn], record[TOut]]{Fetch: w.handle, Codec: w.codec},
		store, func(_ context.Context, r request[TIn]) (string, error) { return r.id, nil }, w.lockmwOptions()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	w.locked = locked
	return w, nil
}

// maxDuplicateWait is how long a duplicate may wait for an answer unless
// the user's lock options say otherwise: Lambda's longest invocation, so
// that the duplicate's deadline decides, not lockcore.DefaultMaxWait.
const maxDuplicateWait = 15 * time.Minute

// lockmwOptions are the user's lockmw options between the idempotency
// layer's defaults and the record's settings, so that the retention, the
// TTL and the largest answer are the idempotency layer's.
func (w *wrapper[TIn, TOut]) lockmwOptions() []lockmw.Option {
	opts := []lockmw.Option{lockmw.WithLockOptions(lockcore.WithMaxWait(maxDuplicateWait))}
	opts = append(opts, w.o.lockmwOpts...)
	return append(opts,
		lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: lockcore.MaxAnswerBytes}),
		lockmw.WithLockOptions(
			lockcore.WithFreshSuccess(w.o.expiresAfter),
			lockcore.WithTTL(w.o.expiresAfter+recordTTLAfterExpiry),
		))
}

// invoke is the idempotent handler.
func (w *wrapper[TIn, TOut]) invoke(ctx context.Context, in TIn) (TOut, error) {
	var zero TOut
	key, err := w.key(ctx, in)
	if err != nil {
		return zero, err
	}
	if key == "" {
		return w.hs.Handle(withInfo(ctx, Info{}), in)
	}
	var payload any = in
	if w.hs.Payload != nil {
		payload = w.hs.Payload(in)
	}
	fp, err := fingerprint(payload)
	if err != nil {
		return zero, err
	}
	r := request[TIn]{event: in, key: key, id: w.o.prefix + "#" + key, fp: fp, held: &held{}}
	if rec, ok := w.cached(r); ok {
		return w.replay(ctx, r, rec)
	}
	lctx, note := answernote.With(ctx)
	rec, err := w.locked(lctx, r)
	if r.held.ran {
		return w.completed(r, rec, err, note.Err())
	}
	if errors.Is(err, lockmw.ErrNoAnswer) {
		return zero, noAnswer(r)
	}
	if err != nil {
		return zero, lockError(err)
	}
	w.remember(r, rec)
	return w.replay(ctx, r, rec)
}

// key is the event's idempotency key, checked; "" with Keys.Optional
// when the event has none.
func (w *wrapper[TIn, TOut]) key(ctx context.Context, in TIn) (string, error) {
	key, err := w.hs.Key(ctx, in)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %w", errKey, err)
	case strings.TrimSpace(key) == "" && w.o.optionalKey:
		return "", nil
	case strings.TrimSpace(key) == "":
		return "", fmt.Errorf("%w: the event has none", errKey)
	case strings.TrimRightFunc(key, unicode.IsSpace) != key:
		// lockmw trims the lock id: "k " would name the record of "k".
		return "", fmt.Errorf("%w: it ends with white space, which the record's id does not keep", errKey)
	case len(key) > maxEventKeyBytes:
		return "", fmt.Errorf("%w: %d bytes, at most %d", errKey, len(key), maxEventKeyBytes)
	case !utf8.ValidString(key):
		return "", fmt.Errorf("%w: not valid UTF-8", errKey)
	}
	return key, nil
}

// handle runs the handler in the invocation that holds the record.
func (w *wrapper[TIn, TOut]) handle(ctx context.Context, r request[TIn]) (record[TOut], error) {
	lock, _ := lockmw.FromContext(ctx)
	r.held.ran, r.held.ctx = true, ctx
	out, err := w.hs.Handle(withInfo(ctx, Info{Key: r.key, Fence: lock.Fence}), r.event)
	if err != nil {
		if w.o.keptErrors > 0 {
			return record[TOut]{}, &keptError{err: err, d: w.o.keptErrors}
		}
		return record[TOut]{}, err
	}
	return record[TOut]{fingerprint: r.fp, completedAtMs: time.Now().UnixMilli(), fence: lock.Fence, out: out}, nil
}

// completed returns the holder's own answer or error, and caches the
// answer once its release stored it. notStored is why lockmw did not
// publish the answer with the release, nil when it did.
func (w *wrapper[TIn, TOut]) completed(r request[TIn], rec record[TOut], err, notStored error) (TOut, error) {
	if err != nil {
		var kept *keptError
		if errors.As(err, &kept) {
			err = kept.err
		}
		var zero TOut
		return zero, err
	}
	// The holder's context ends with lockcore.ErrReleased only after its
	// success was written; after a lost lease or a failed release the
	// record does not hold this answer, and neither may the cache.
	cause := context.Cause(r.held.ctx)
	// A hold that ended before the handler returned (its lease lost, its
	// maximum hold reached) published nothing: the record was taken over
	// or released as failed, and another holder's answer is, or will be,
	// the key's. This one would be a second answer: the caller retries
	// for the key's own.
	if cause != nil && !errors.Is(cause, lockcore.ErrReleased) && !errors.Is(cause, lockcore.ErrReleaseFailed) {
		var zero TOut
		return zero, fmt.Errorf("idempotency: the hold ended before the handler returned, its answer is not the key's; a retry gets the key's answer: %w", cause)
	}
	// A release that failed (the store did not answer, or refused) may or
	// may not have completed the record: if it did not, the record is
	// taken over once its lease lapses and another run's answer becomes
	// the key's. Returning this one could give the key two answers; the
	// caller's retry gets the key's own (this one, if the release was
	// applied).
	if errors.Is(cause, lockcore.ErrReleaseFailed) {
		var zero TOut
		return zero, fmt.Errorf("idempotency: key %q: the handler ran but the store did not confirm the record's completion, so its answer may not be the key's; a retry gets the key's answer: %w", r.key, cause)
	}
	if notStored != nil {
		return w.notStored(r)
	}
	if errors.Is(cause, lockcore.ErrReleased) {
		w.remember(r, rec)
	}
	return rec.out, nil
}

// notStored is the holder's error when its answer was not stored with the
// record (too large for the item with no answer store, refused by the
// answer store): the record is completed without an answer, so every
// duplicate within the retention gets an error matching
// lockmw.ErrNoAnswer, without running the handler again, and the holder's
// caller gets the same, not an answer that no other caller of the key
// can get. lockmw's log line of the holder says why, at Error level; the
// error carries no store error text.
func (w *wrapper[TIn, TOut]) notStored(r request[TIn]) (TOut, error) {
	var zero TOut
	return zero, fmt.Errorf("idempotency: key %q: the handler ran but its answer was not stored with the record (an answer over %d bytes as stored needs lockmw.WithAnswers in WithLockmwOptions; the log line says why), so no invocation with the key gets it and none runs the handler again within the retention: %w",
		r.key, lockcore.MaxAnswerBytes, lockmw.ErrNoAnswer)
}

// noAnswer is a duplicate's error when the record is completed but its
// answer cannot be replayed: not stored, missing or altered in the answer
// store, or the answer store failed the read. It carries none of the
// answer store's error text, which can name the account, the role and
// the bucket; lockmw's log line of the invocation has it.
func noAnswer[TIn any](r request[TIn]) error {
	return fmt.Errorf("idempotency: key %q: the record is completed but its answer cannot be replayed (not stored, missing or altered in the answer store, or the answer store failed; the log line says why): %w",
		r.key, lockmw.ErrNoAnswer)
}

// replay returns a stored answer whose fingerprint matches.
func (w *wrapper[TIn, TOut]) replay(ctx context.Context, r request[TIn], rec record[TOut]) (TOut, error) {
	if rec.fingerprint != r.fp {
		var zero TOut
		return zero, fmt.Errorf("%w: key %q", ErrPayloadMismatch, r.key)
	}
	if w.hs.OnReplay == nil {
		return rec.out, nil
	}
	info := Info{Key: r.key, Replay: true, Fence: rec.fence, CompletedAt: rec.completedAt()}
	return w.hs.OnReplay(withInfo(ctx, info), r.event, rec.out)
}

// operations numbers the operations built in the process.
var operations atomic.Uint64

// cacheKey names the record in the cache: the operation (whose lock group
// is its own) and the lock id. A shared cache holds the entries of each operation
// apart: another operation's store (another table) may not hold the
// record, and its codec may read the answer as another type.
func (w *wrapper[TIn, TOut]) cacheKey(r request[TIn]) string {
	return strconv.FormatUint(w.op, 10) + "\x00" + r.id
}

// cached returns the cached record of r, if there is one.
func (w *wrapper[TIn, TOut]) cached(r request[TIn]) (record[TOut], bool) {
	if w.o.cache == nil {
		return record[TOut]{}, false
	}
	stored, ok := w.o.cache.get(w.cacheKey(r), time.Now())
	if !ok {
		return record[TOut]{}, false
	}
	rec, err := w.codec.Decode(stored)
	return rec, err == nil
}

// remember caches rec, a completed record whose fingerprint is r's and
// that the store holds (inline or by reference), until its expiry.
func (w *wrapper[TIn, TOut]) remember(r request[TIn], rec record[TOut]) {
	if w.o.cache == nil || rec.fingerprint != r.fp {
		return
	}
	stored, err := w.codec.Encode(rec)
	if err != nil {
		return
	}
	w.o.cache.put(w.cacheKey(r), stored, rec.completedAt().Add(w.o.expiresAfter))
}

// lockError is the invocation's error when the record's lock neither ran
// the handler nor replayed an answer: a wait that timed out is
// ErrInProgress, unless it never had the record from the store (a table
// that throttled every call), which cannot tell that anyone runs.
func lockError(err error) error {
	if errors.Is(err, lockcore.ErrWaitTimeout) && !errors.Is(err, waitoutcome.ErrItemUnread) {
		return fmt.Errorf("%w: %w", ErrInProgress, err)
	}
	return err
}

// keptError is a handler error kept for d: lockmw publishes its failure
// with a not-before d after it (see lockmw.RetryAfterer).
type keptError struct {
	err error
	d   time.Duration
}

func (e *keptError) Error() string             { return e.err.Error() }
func (e *keptError) Unwrap() error             { return e.err }
func (e *keptError) RetryAfter() time.Duration { return e.d }
