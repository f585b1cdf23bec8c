package proc

import (
	"bytes"
	"sync"
)

// FirstLine is an io.Writer that sends the first complete line written to
// it on C and discards everything else: a launcher's stdout, whose first
// line says where the server listens. Make it with [NewFirstLine].
type FirstLine struct {
	C    chan string // receives the first line, once
	mu   sync.Mutex  // guards buf and sent
	buf  []byte
	sent bool
}

// NewFirstLine returns a FirstLine whose C holds the line until read.
func NewFirstLine() *FirstLine { return &FirstLine{C: make(chan string, 1)} }

func (w *FirstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.C <- string(w.buf[:i])
		w.sent, w.buf = true, nil
	}
	return len(p), nil
}
