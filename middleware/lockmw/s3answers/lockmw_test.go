package s3answers_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// refusedStore signals on refused each acquire refused because another
// invocation holds the lock, and runs beforeRelease (when set) before it
// passes a release on.
type refusedStore struct {
	storeapi.Store
	refused       chan struct{}
	beforeRelease func(context.Context)
}

func (s *refusedStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	it, err := s.Store.Acquire(ctx, req)
	if errors.Is(err, storeapi.ErrConditionFailed) && s.refused != nil {
		select {
		case s.refused <- struct{}{}:
		default:
		}
	}
	return it, err
}

func (s *refusedStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if s.beforeRelease != nil {
		s.beforeRelease(ctx)
	}
	return s.Store.Release(ctx, req)
}

type quote struct{ Pair string }

// environment is one Lambda function's wrapper: its own S3 client and
// answer store, on the lock table (here a MemoryStore) it shares with the
// others.
func environment(t *testing.T, locks storeapi.Store, prefix string, logs io.Writer, fetch func(context.Context, quote) ([]byte, error)) func(context.Context, quote) ([]byte, error) {
	t.Helper()
	answers, _ := newStore(t, prefix)
	h, err := lockmw.New(fetch, locks, func(_ context.Context, q quote) (string, error) { return q.Pair, nil },
		lockmw.WithLockGroup("fx"),
		lockmw.WithoutCoalescing(),
		lockmw.WithAnswers(lockmw.Answers{Store: answers}),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(logs, nil)), EMFWriter: io.Discard}),
	)
	if err != nil {
		t.Fatalf("lockmw.New() = %v", err)
	}
	return h
}

// invoke runs h as one Lambda invocation with a 20 s deadline.
func invoke(ctx context.Context, h func(context.Context, quote) ([]byte, error), reqID string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       reqID,
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:fetch",
	})
	return h(ctx, quote{Pair: "EUR-USD"})
}

// herdOfTwo runs the holder in environment A and, while it holds the lock,
// a waiter in environment B; the holder's fetch returns answer once B's
// acquire was refused. beforeRelease runs in A before its release.
func herdOfTwo(t *testing.T, prefix string, answer []byte, beforeRelease func(context.Context)) herdResult {
	t.Helper()
	var (
		held, waited     []byte
		heldErr, waitErr error
	)
	locks := lockcore.NewMemoryStore()
	waiting := make(chan struct{}, 1)
	holding := make(chan struct{})
	var logA, logB syncBuffer
	fetches := 0
	a := environment(t, &refusedStore{Store: locks, beforeRelease: beforeRelease}, prefix, &logA, func(ctx context.Context, _ quote) ([]byte, error) {
		fetches++
		close(holding)
		select {
		case <-waiting:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return answer, nil
	})
	b := environment(t, &refusedStore{Store: locks, refused: waiting}, prefix, &logB, func(context.Context, quote) ([]byte, error) {
		t.Error("the waiter in B ran the fetch")
		return nil, errors.New("test: B fetched")
	})
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		held, heldErr = invoke(t.Context(), a, "req-a")
	}()
	// B starts once A holds the lock: A's fetch is running.
	select {
	case <-holding:
	case <-aDone:
		t.Fatalf("the holder returned before its fetch: %v\n%s", heldErr, logA.String())
	}
	waited, waitErr = invoke(t.Context(), b, "req-b")
	<-aDone
	if fetches != 1 {
		t.Errorf("A fetched %d times, want 1", fetches)
	}
	return herdResult{held, waited, heldErr, waitErr, logA.String() + logB.String()}
}

// herdResult is what each of the two invocations returned, and their log
// lines.
type herdResult struct {
	held, waited     []byte
	heldErr, waitErr error
	logs             string
}

// The holder's answer of 1 MiB, over the inline maximum, goes to S3; the
// waiter in another environment (its own client and store, the same lock
// table and bucket) returns it byte for byte without fetching.
func TestWaiterInAnotherEnvironmentGetsALargeAnswerFromS3(t *testing.T) {
	answer := noise(1<<20, 3)
	r := herdOfTwo(t, "e2e-answer/", answer, nil)
	held, waited, heldErr, waitErr, logs := r.held, r.waited, r.heldErr, r.waitErr, r.logs
	if heldErr != nil || !bytes.Equal(held, answer) {
		t.Fatalf("holder: %d bytes, %v; want its answer", len(held), heldErr)
	}
	if waitErr != nil || !bytes.Equal(waited, answer) {
		t.Fatalf("waiter: %d bytes, %v; want the holder's %d bytes\n%s", len(waited), waitErr, len(answer), logs)
	}
	_, client := newStore(t, "")
	if n := countObjects(t, client, "e2e-answer/"); n != 1 {
		t.Errorf("%d objects under the prefix, want the one answer", n)
	}
}

// An object replaced in S3 between the holder's put and the waiter's read,
// by another answer that lockmw itself stored (well formed, so only the
// SHA-256 check can tell), gives the waiter lockmw.ErrNoAnswer, never the
// other answer, and an error that names neither the bucket nor the
// endpoint.
func TestWaiterRefusesAnAnswerAlteredInS3(t *testing.T) {
	answer := noise(600<<10, 4)
	other := noise(600<<10, 5)
	_, client := newStore(t, "")

	// Another holder's stored answer, under a prefix of its own.
	solo := environment(t, lockcore.NewMemoryStore(), "e2e-other/", io.Discard, func(context.Context, quote) ([]byte, error) { return other, nil })
	if got, err := invoke(t.Context(), solo, "req-other"); err != nil || !bytes.Equal(got, other) {
		t.Fatalf("the other holder: %d bytes, %v", len(got), err)
	}
	otherStored := onlyObject(t, t.Context(), client, "e2e-other/")

	alter := func(ctx context.Context) {
		key := onlyObjectKey(t, ctx, client, "e2e-altered/")
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: new(bucket), Key: new(key), Body: bytes.NewReader(otherStored)}); err != nil {
			t.Errorf("altering the object: %v", err)
		}
	}
	r := herdOfTwo(t, "e2e-altered/", answer, alter)
	waited, heldErr, waitErr, logs := r.waited, r.heldErr, r.waitErr, r.logs
	if heldErr != nil {
		t.Fatalf("holder: %v", heldErr)
	}
	if !errors.Is(waitErr, lockmw.ErrNoAnswer) || waited != nil {
		t.Fatalf("waiter: %d bytes (the other answer: %v), %v; want lockmw.ErrNoAnswer\n%s", len(waited), bytes.Equal(waited, other), waitErr, logs)
	}
	for _, leak := range []string{bucket, strings.TrimPrefix(server.Endpoint(), "http://")} {
		if strings.Contains(waitErr.Error(), leak) {
			t.Errorf("the waiter's error %q names %q", waitErr, leak)
		}
	}
}

// onlyObjectKey returns the key of the one object under prefix.
func onlyObjectKey(t *testing.T, ctx context.Context, client *s3.Client, prefix string) string {
	t.Helper()
	out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: new(bucket), Prefix: new(prefix)})
	if err != nil || len(out.Contents) != 1 {
		t.Fatalf("ListObjectsV2(%s) = %v; want one object", prefix, err)
	}
	return *out.Contents[0].Key
}

// onlyObject returns the bytes of the one object under prefix.
func onlyObject(t *testing.T, ctx context.Context, client *s3.Client, prefix string) []byte {
	t.Helper()
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: new(bucket), Key: new(onlyObjectKey(t, ctx, client, prefix))})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func countObjects(t *testing.T, client *s3.Client, prefix string) int {
	t.Helper()
	out, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: new(bucket), Prefix: new(prefix)})
	if err != nil {
		t.Fatalf("ListObjectsV2() = %v", err)
	}
	return len(out.Contents)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
