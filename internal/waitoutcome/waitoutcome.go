// Package waitoutcome holds what a lockcore wait's error tells the
// middleware beyond lockcore's exported errors, so that a layer above
// can answer its caller truthfully.
package waitoutcome

import "errors"

// ErrItemUnread is in the error of a wait that timed out without ever
// having the lock item from the store (every read and write throttled or
// unanswered): the wait cannot tell whether anyone holds the lock, so a
// layer must not say that an invocation with the same key is in
// progress.
var ErrItemUnread = errors.New("the store answered none of this wait's reads of the lock item")

// unreadError is a wait-timeout error that matches ErrItemUnread.
type unreadError struct{ err error }

func (e *unreadError) Error() string   { return e.err.Error() + ": " + ErrItemUnread.Error() }
func (e *unreadError) Unwrap() []error { return []error{e.err, ErrItemUnread} }

// Unread returns err, a wait's timeout error, matching ErrItemUnread too.
func Unread(err error) error { return &unreadError{err: err} }

// Read returns err without ErrItemUnread when Unread made it: for a wait
// that another one in the process stood in for (a coalesced follower
// whose leader had the lock item), as a waiter on the store that had
// waited as long would have had the item.
func Read(err error) error {
	if u, ok := err.(*unreadError); ok {
		return u.err
	}
	return err
}
