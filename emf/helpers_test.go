package emf

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// testTime is the clock of every test document.
var testTime = time.UnixMilli(1700000000000)

func fixedClock() time.Time { return testTime }

// syncBuffer is a bytes.Buffer safe for concurrent Writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// newTest returns a Metrics writing to a buffer, with namespace "Test",
// service "svc" and the fixed clock, independent of the environment.
func newTest(t testing.TB, opts ...Option) (*Metrics, *syncBuffer) {
	t.Helper()
	buf := new(syncBuffer)
	base := []Option{WithNamespace("Test"), WithService("svc"), WithWriter(buf), withClock(fixedClock), withDisabled(false)}
	m, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return m, buf
}

// flushDocs flushes m and returns its validated documents.
func flushDocs(t testing.TB, m *Metrics, buf *syncBuffer) []emfDoc {
	t.Helper()
	if err := m.Flush(); err != nil {
		t.Fatalf("Flush() = %v", err)
	}
	docs, err := validateOutput(buf.Bytes())
	if err != nil {
		t.Fatalf("invalid output: %v", err)
	}
	buf.mu.Lock()
	buf.buf.Reset()
	buf.mu.Unlock()
	return docs
}
