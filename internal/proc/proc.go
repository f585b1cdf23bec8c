// Package proc holds what the project's test servers (Dynoxide, dynalite,
// the Lambda Runtime Interface Emulator) need to run a child process: a
// process group to kill it with everything it started, a child that dies
// with its parent, and the tail of its stderr for error messages.
package proc

import (
	"strings"
	"sync"
)

// Tail keeps the last Max bytes written to it. It is safe for concurrent
// use.
type Tail struct {
	Max int

	mu  sync.Mutex // guards buf
	buf []byte
}

func (b *Tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

// String returns what was kept, trimmed, or "(no stderr)".
func (b *Tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return "(no stderr)"
	}
	return s
}
