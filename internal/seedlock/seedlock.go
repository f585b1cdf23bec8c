package seedlock

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Defaults, as the seed's constants module presumably set them; each can
// be changed with an Option.
const (
	DefaultLease         = 6 * time.Second
	DefaultMinLease      = time.Second
	DefaultMaxHold       = 5 * time.Minute
	DefaultRenewInterval = 500 * time.Millisecond
	DefaultPollInterval  = 200 * time.Millisecond
	DefaultMaxWait       = 30 * time.Second
	// DefaultAcquireJitter is the seed's random sleep before the put.
	DefaultAcquireJitter = 200 * time.Millisecond
)

// Outcome is the result of [Lock.TryAcquireElseWaitForRelease].
type Outcome = lockcore.Outcome

// The seed's outcomes. Failed: the wait timed out or acquisition raised an
// error. Acquired: the lock is ours. Released: the lock was seen released,
// missing, expired or not renewed; the seed assumes, wrongly, that the
// holder stored its result.
const (
	Failed   = lockcore.Failed
	Acquired = lockcore.Acquired
	Released = lockcore.Released
)

// API is the part of the DynamoDB API the lock calls. *dynamodb.Client
// satisfies it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Params names the lock and the invocation, exactly as for lockcore.
type Params = lockcore.Params

type options struct {
	lease, minLease, maxHold, renewInterval, poll, maxWait, jitter time.Duration
	consistent                                                     bool
	clock                                                          lockcore.Clock
}

// Option configures a Lock.
type Option func(*options)

// WithLease sets the lease. Default [DefaultLease]; raised to
// [DefaultMinLease] when shorter.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithMaxHold sets the hard maximum hold. Default [DefaultMaxHold].
func WithMaxHold(d time.Duration) Option { return func(o *options) { o.maxHold = d } }

// WithRenewInterval sets the renewal floor: renewal runs every max(d,
// lease/3). Default [DefaultRenewInterval].
func WithRenewInterval(d time.Duration) Option { return func(o *options) { o.renewInterval = d } }

// WithPollInterval sets the poll interval; waiters poll every max(poll,
// lease/2). Default [DefaultPollInterval].
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.poll = d } }

// WithMaxWait sets the maximum wait. Default [DefaultMaxWait].
func WithMaxWait(d time.Duration) Option { return func(o *options) { o.maxWait = d } }

// WithAcquireJitter sets the upper bound of the random sleep before the
// put. Default [DefaultAcquireJitter].
func WithAcquireJitter(d time.Duration) Option { return func(o *options) { o.jitter = d } }

// WithConsistentReads makes reads strongly consistent. Default: eventually
// consistent, as the seed's GetItem calls are (F10).
func WithConsistentReads() Option { return func(o *options) { o.consistent = true } }

// WithClock sets the wall clock every time is read from, expiry and waiting
// included. Default: the system clock.
func WithClock(c lockcore.Clock) Option { return func(o *options) { o.clock = c } }

type sysClock struct{}

func (sysClock) Now() time.Time { return time.Now() }

// Lock is the seed's DistributedLock. Its methods are safe for concurrent
// use.
type Lock struct {
	api           API
	table         string
	key           lockcore.Key
	owner         string
	recordAccount string
	remaining     func() time.Duration
	o             options

	mu         sync.Mutex // guards the fields below
	hasLock    bool
	revision   string
	observedMs int64 // lockDurationMs of the item last seen held by another
	ctx        context.Context
	cancel     context.CancelCauseFunc
	stop       chan struct{}
	done       chan struct{}
}

// ErrAborted is the cause of the holder's context when renewal failed, the
// maximum hold passed, or the lock was released.
var ErrAborted = errors.New("seedlock: lock aborted")

// New returns a Lock. It validates the parameters as the seed's
// constructor does.
func New(api API, table string, p Params, opts ...Option) (*Lock, error) {
	var blank []string
	for _, f := range []struct{ name, v string }{{"lockId", p.LockID}, {"lockGroup", p.LockGroup}, {"ownerName", p.HolderName}} {
		if strings.TrimSpace(f.v) == "" {
			blank = append(blank, f.name)
		}
	}
	switch {
	case len(blank) > 0:
		return nil, fmt.Errorf("seedlock: the following fields must not be empty: %s", strings.Join(blank, ", "))
	case p.AccountID <= 0:
		return nil, errors.New("seedlock: accountId must be a positive number")
	case p.AppID <= 0:
		return nil, errors.New("seedlock: appId must be a positive number")
	case api == nil || table == "":
		return nil, errors.New("seedlock: a client and a table are required")
	}
	o := options{lease: DefaultLease, minLease: DefaultMinLease, maxHold: DefaultMaxHold, renewInterval: DefaultRenewInterval,
		poll: DefaultPollInterval, maxWait: DefaultMaxWait, jitter: DefaultAcquireJitter, clock: sysClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	o.lease = max(o.lease, o.minLease)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrAborted)
	return &Lock{api: api, table: table, key: lockcore.Key{Group: p.LockGroup, ID: p.LockID}, owner: p.HolderName,
		recordAccount: fmt.Sprintf("act:%d/app:%d", p.AccountID, p.AppID), remaining: p.RemainingTime, o: o,
		ctx: ctx, cancel: cancel}, nil
}

// item is the seed's lock item.
type item struct {
	Revision       string
	Owner          string
	CreatedAt      int64
	LockDurationMs int64
	ExpiresAt      int64
	IsReleased     bool
}

func (l *Lock) now() int64 { return l.o.clock.Now().UnixMilli() }

func (l *Lock) keyAV() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: storeapi.PartitionKey(l.key)}}
}

func (l *Lock) get(ctx context.Context) (*item, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: l.keyAV(), ConsistentRead: aws.Bool(l.o.consistent)})
	if err != nil {
		return nil, fmt.Errorf("seedlock: get: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	it := &item{}
	if v, ok := out.Item["revision"].(*types.AttributeValueMemberS); ok {
		it.Revision = v.Value
	}
	if v, ok := out.Item["ownerName"].(*types.AttributeValueMemberS); ok {
		it.Owner = v.Value
	}
	if v, ok := out.Item["isReleased"].(*types.AttributeValueMemberBOOL); ok {
		it.IsReleased = v.Value
	}
	numOf := func(name string) int64 {
		if v, ok := out.Item[name].(*types.AttributeValueMemberN); ok {
			n, _ := strconv.ParseInt(v.Value, 10, 64)
			return n
		}
		return 0
	}
	it.CreatedAt, it.LockDurationMs, it.ExpiresAt = numOf("createdAt"), numOf("lockDurationMs"), numOf("expiresAt")
	return it, nil
}

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func s(v string) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: v}
}

// Acquire is the seed's acquireLock: true when the lock is ours.
func (l *Lock) Acquire(ctx context.Context) (bool, error) {
	l.mu.Lock()
	held, rev := l.hasLock, l.revision
	l.mu.Unlock()
	if held {
		cur, err := l.get(ctx)
		if err != nil {
			return false, err
		}
		if cur == nil || cur.Revision != rev {
			l.cleanup()
			return false, fmt.Errorf("seedlock: stale lock %s", rev)
		}
		return true, nil
	}
	cur, err := l.get(ctx)
	if err != nil {
		return false, err
	}
	if cur != nil && !cur.IsReleased && cur.CreatedAt+cur.LockDurationMs > l.now() {
		l.mu.Lock()
		l.observedMs = cur.LockDurationMs
		l.mu.Unlock()
		return false, nil
	}
	now := l.o.clock.Now()
	newRev := uuidv7(now)
	maxHold := l.o.maxHold
	if l.remaining != nil {
		maxHold = min(maxHold, l.remaining())
	}
	if l.o.jitter > 0 {
		t := time.NewTimer(time.Duration(mrand.Int64N(int64(l.o.jitter)) + 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, context.Cause(ctx)
		case <-t.C:
		}
	}
	nowMs := l.now()
	cond := "attribute_not_exists(#k)"
	names := map[string]string{"#k": storeapi.AttrLockKey}
	values := map[string]types.AttributeValue{}
	if cur != nil {
		cond = "#rev = :cur"
		names = map[string]string{"#rev": "revision"}
		values[":cur"] = s(cur.Revision)
	}
	in := &dynamodb.PutItemInput{
		TableName: aws.String(l.table),
		Item: map[string]types.AttributeValue{
			storeapi.AttrLockKey: s(storeapi.PartitionKey(l.key)),
			"lockGroup":          s(l.key.Group), "lockId": s(l.key.ID), "ownerName": s(l.owner),
			"revision": s(newRev), "createdAt": n(nowMs), "lockDurationMs": n(l.o.lease.Milliseconds()),
			"expiresAt": n(nowMs + maxHold.Milliseconds()), "isReleased": &types.AttributeValueMemberBOOL{Value: false},
			"recordAccount": s(l.recordAccount),
		},
		ConditionExpression:      aws.String(cond),
		ExpressionAttributeNames: names,
	}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	if _, err := l.api.PutItem(ctx, in); err != nil {
		// The seed's database layer throws here, a failed condition
		// included: the caller reports FAILED (and F5's ghost lock stays).
		return false, fmt.Errorf("seedlock: acquire: %w", err)
	}
	re, err := l.get(ctx)
	if err != nil {
		return false, err
	}
	if re == nil {
		return false, errors.New("seedlock: acquire: no recheck lock item")
	}
	if re.Revision != newRev {
		return false, nil
	}
	hctx, cancel := context.WithCancelCause(context.Background())
	l.mu.Lock()
	l.hasLock, l.revision = true, newRev
	l.ctx, l.cancel = hctx, cancel
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	stop, done := l.stop, l.done
	l.mu.Unlock()
	go l.keep(newRev, nowMs+maxHold.Milliseconds(), stop, done)
	return true, nil
}

// keep renews every max(renewInterval, lease/3) and aborts at expiresAt by
// the wall clock, as the seed's timers do.
func (l *Lock) keep(rev string, expiresAt int64, stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(max(l.o.renewInterval, l.o.lease/3))
	defer tick.Stop()
	timeout := time.NewTimer(time.Duration(expiresAt-l.now()) * time.Millisecond)
	defer timeout.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timeout.C:
			l.abort()
			l.releaseRev(context.Background(), rev)
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.o.lease)
			_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(l.table), Key: l.keyAV(),
				UpdateExpression:          aws.String("SET createdAt = :now, lockDurationMs = :d"),
				ConditionExpression:       aws.String("revision = :rev"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(l.now()), ":d": n(l.o.lease.Milliseconds()), ":rev": s(rev)},
			})
			cancel()
			if err != nil {
				l.abort()
				l.releaseRev(context.Background(), rev)
				return
			}
		}
	}
}

func (l *Lock) abort() {
	l.mu.Lock()
	l.hasLock = false
	cancel := l.cancel
	l.mu.Unlock()
	cancel(ErrAborted)
}

func (l *Lock) cleanup() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	l.abort()
}

// releaseRev is the seed's attemptRelease: 5 attempts with capped
// exponential backoff plus jitter, conditioned on revision and owner name.
func (l *Lock) releaseRev(ctx context.Context, rev string) error {
	const attempts, maxBackoff = 5, 2 * time.Second
	var err error
	for a := range attempts {
		if a > 0 {
			d := min(maxBackoff/attempts<<(a-1), maxBackoff) + time.Duration(mrand.Int64N(int64(100*time.Millisecond)))
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return context.Cause(ctx)
			case <-t.C:
			}
		}
		_, err = l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(l.table), Key: l.keyAV(),
			UpdateExpression:          aws.String("SET isReleased = :t, releasedAt = :now"),
			ConditionExpression:       aws.String("revision = :rev AND ownerName = :owner"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}, ":now": n(l.now()), ":rev": s(rev), ":owner": s(l.owner)},
		})
		var ccf *types.ConditionalCheckFailedException
		if err == nil || errors.As(err, &ccf) {
			return nil // the seed's database layer returns no item: nothing to release
		}
	}
	return fmt.Errorf("seedlock: failed to release lock after %d attempts: %w", attempts, err)
}

// Release releases the lock if held.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	held, rev := l.hasLock, l.revision
	l.mu.Unlock()
	if !held {
		l.cleanup()
		return nil
	}
	l.cleanup()
	return l.releaseRev(ctx, rev)
}

// TryAcquireElseWaitForRelease is the seed's method of the same name.
func (l *Lock) TryAcquireElseWaitForRelease(ctx context.Context) (Outcome, error) {
	start := l.now()
	ok, err := l.Acquire(ctx)
	if err != nil {
		return Failed, err
	}
	if ok {
		return Acquired, nil
	}
	l.mu.Lock()
	dur := l.observedMs
	l.mu.Unlock()
	if dur == 0 {
		dur = DefaultLease.Milliseconds()
	}
	poll := max(l.o.poll, time.Duration(dur)*time.Millisecond/2)
	for l.now()-start < l.o.maxWait.Milliseconds() {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return Failed, context.Cause(ctx)
		case <-t.C:
		}
		it, err := l.get(ctx)
		if err != nil {
			return Failed, err
		}
		now := l.now()
		if it == nil || it.IsReleased || it.ExpiresAt <= now || it.CreatedAt+it.LockDurationMs+poll.Milliseconds() <= now {
			return Released, nil
		}
	}
	return Failed, errors.New("seedlock: wait timed out")
}

// HasLock reports whether the lock is held.
func (l *Lock) HasLock() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hasLock
}

// Revision returns the current revision, "" when not held.
func (l *Lock) Revision() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.hasLock {
		return ""
	}
	return l.revision
}

// Context returns the holder's context: cancelled with [ErrAborted] when
// renewal fails, the maximum hold passes, or the lock is released.
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ctx
}

// Fence returns the millisecond timestamp in the revision, which is what
// the seed's uuidv7 offers as an order. It is not a fencing token: it
// follows the holder's wall clock, so a later holder can get a smaller one.
func (l *Lock) Fence() int64 { return RevisionTime(l.Revision()) }

// RevisionTime returns the Unix millisecond timestamp of a uuidv7 revision,
// or 0.
func RevisionTime(rev string) int64 {
	h := strings.ReplaceAll(rev, "-", "")
	if len(h) < 12 {
		return 0
	}
	v, err := strconv.ParseInt(h[:12], 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// uuidv7 returns a version 7 UUID for time t.
func uuidv7(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(t.UnixMilli()))
	copy(b[:6], ts[2:])
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
