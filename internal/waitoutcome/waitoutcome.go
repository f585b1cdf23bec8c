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
