package s3answers_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/middleware/lockmw/s3answers"
	"github.com/herdlock/herdlock/middleware/lockmw/s3answers/internal/s3rver"
)

// ref is a ref shaped as lockmw makes them.
const ref = "herdlock-answer/0123456789abcdef0123456789abcdef/7-rev1"

// checkTold fails t when err's text names the bucket or the endpoint, or
// carries S3's own message, which can name the bucket, the account and the
// role.
func checkTold(t *testing.T, err error, endpoint string) {
	t.Helper()
	msg := err.Error()
	for _, leak := range []string{bucket, endpoint, strings.TrimPrefix(endpoint, "http://"), "operation error", "api error"} {
		if leak != "" && strings.Contains(msg, leak) {
			t.Errorf("error %q names %q", msg, leak)
		}
	}
	if !strings.HasPrefix(msg, "s3answers: ") {
		t.Errorf("error %q does not start with s3answers:", msg)
	}
}

// An answer of about 1 MiB put under a ref comes back byte for byte, from
// the object prefix+ref, through a client of another function.
func TestPutThenGetRoundTrip(t *testing.T) {
	put, client := newStore(t, "answers/")
	get, _ := newStore(t, "answers/")
	data := noise(1<<20+17, 1)
	if err := put.PutAnswer(t.Context(), ref, data); err != nil {
		t.Fatalf("PutAnswer() = %v", err)
	}
	got, err := get.GetAnswer(t.Context(), ref)
	if err != nil {
		t.Fatalf("GetAnswer() = %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("GetAnswer() = %d bytes, want the %d put", len(got), len(data))
	}
	out, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: new(bucket), Key: new("answers/" + ref)})
	if err != nil {
		t.Fatalf("GetObject(answers/ + ref) = %v; want the object under prefix+ref", err)
	}
	out.Body.Close()
}

// A ref with no object is an error matching ErrNotFound, told without the
// bucket or S3's message.
func TestGetOfAMissingRef(t *testing.T) {
	st, _ := newStore(t, "missing/")
	got, err := st.GetAnswer(t.Context(), ref)
	if !errors.Is(err, s3answers.ErrNotFound) || got != nil {
		t.Fatalf("GetAnswer() = %d bytes, %v; want ErrNotFound", len(got), err)
	}
	checkTold(t, err, server.Endpoint())
}

// A server that has stopped fails the put and the get with an error that
// says the endpoint refused the connection, before the context's deadline
// (the SDK's default retries included), not when it ends.
func TestStoppedServerFailsFast(t *testing.T) {
	s, err := s3rver.Start(t.Context(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3answers.New(s3rver.NewClient(s.Endpoint()), bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutAnswer(t.Context(), ref, []byte("answer")); err != nil {
		t.Fatalf("PutAnswer() before the stop = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, getErr := st.GetAnswer(ctx, ref)
	putErr := st.PutAnswer(ctx, ref+"-2", []byte("answer"))
	if ctx.Err() != nil {
		t.Fatalf("the calls ran to the deadline: get %v, put %v", getErr, putErr)
	}
	for _, err := range []error{getErr, putErr} {
		if err == nil || !strings.Contains(err.Error(), "refused the connection") || errors.Is(err, s3answers.ErrNotFound) {
			t.Errorf("error = %v; want the endpoint refused the connection", err)
			continue
		}
		checkTold(t, err, s.Endpoint())
	}
}

// An endpoint that accepts connections and never answers (a partition, a
// hung proxy) holds a call no longer than its context: the put and the
// get end with an error matching context.DeadlineExceeded.
func TestContextDeadlineEndsAHungCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // read nothing, answer nothing
		}
	}()
	defer func() {
		ln.Close()
		for {
			select {
			case c := <-held:
				c.Close()
			default:
				return
			}
		}
	}()
	endpoint := "http://" + ln.Addr().String()
	st, err := s3answers.New(s3rver.NewClient(endpoint), bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func(context.Context) error
	}{
		{"get", func(ctx context.Context) error { _, err := st.GetAnswer(ctx, ref); return err }},
		{"put", func(ctx context.Context) error { return st.PutAnswer(ctx, ref, noise(256<<10, 2)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			err := tt.call(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s = %v; want context.DeadlineExceeded", tt.name, err)
			}
			checkTold(t, err, endpoint)
		})
	}
}

// New refuses a configuration that cannot work; the Store refuses a ref
// that is not a safe object key before any request.
func TestBadConfigurationIsAnErrorAtNew(t *testing.T) {
	client := s3rver.NewClient(server.Endpoint())
	var nilClient *s3.Client
	tests := []struct {
		name   string
		client s3answers.Client
		bucket string
		prefix string
	}{
		{"nil client", nil, bucket, ""},
		{"typed nil client", nilClient, bucket, ""},
		{"empty bucket", client, "", ""},
		{"white-space bucket", client, " ", ""},
		{"bucket with white space around", client, bucket + "\n", ""},
		{"prefix with a space", client, bucket, "my answers/"},
		{"prefix with a dot-dot segment", client, bucket, "a/../b/"},
		{"prefix with a non-ASCII letter", client, bucket, "réponses/"},
		{"prefix over 512 bytes", client, bucket, strings.Repeat("a", 513)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := s3answers.New(tt.client, tt.bucket, tt.prefix)
			if err == nil || st != nil || !strings.HasPrefix(err.Error(), "s3answers: New: ") {
				t.Fatalf("New() = %v, %v; want an error", st, err)
			}
		})
	}

	st, _ := newStore(t, "")
	for _, bad := range []string{"", "a b", "a/../b", "a\x00b", "ключ", strings.Repeat("r", 1025)} {
		if err := st.PutAnswer(t.Context(), bad, []byte("x")); err == nil {
			t.Errorf("PutAnswer(%q) = nil; want an error", bad)
		}
		if _, err := st.GetAnswer(t.Context(), bad); err == nil || errors.Is(err, s3answers.ErrNotFound) {
			t.Errorf("GetAnswer(%q) = %v; want a bad-ref error", bad, err)
		}
	}
}
