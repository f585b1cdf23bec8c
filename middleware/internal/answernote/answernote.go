// Package answernote tells a layer over lockmw whether the answer its
// holder returned was published with the release: lockmw records, in the
// invocation's context, why a holder's answer was not published (too
// large with no answer store, refused by the answer store, not
// encodable), and the layer that put the note in the context reads it
// once lockmw's handler has returned.
package answernote

import "context"

// Note is the record of one invocation. It is written by lockmw's holder
// before lockmw's handler returns and read after: one goroutine at a
// time, ordered by that return.
type Note struct {
	err error
}

// Err is why the holder's answer was not published, nil when it was or
// when the invocation did not hold the lock.
func (n *Note) Err() error { return n.err }

type noteKey struct{}

// With returns ctx carrying a new note, and the note.
func With(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, noteKey{}, n), n
}

// NotPublished records err, why the holder's answer was not published, in
// ctx's note, if ctx carries one.
func NotPublished(ctx context.Context, err error) {
	if n, ok := ctx.Value(noteKey{}).(*Note); ok {
		n.err = err
	}
}
