package sqsmw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// JSONBody returns a key function that decodes a record's body as one JSON
// value into a B and takes the lock id from it with key. A body that is
// not JSON of B's shape is an error matching [ErrBadRecord], which fails
// the record. The function is safe for concurrent use when key is.
func JSONBody[B any](key func(B) (string, error)) func(context.Context, events.SQSMessage) (string, error) {
	return func(_ context.Context, r events.SQSMessage) (string, error) {
		b, err := DecodeJSON[B](r)
		if err != nil {
			return "", err
		}
		return key(b)
	}
}

// DecodeJSON decodes the body of r as one JSON value into a B, for a
// handler that reads the body the key function read. An error matches
// [ErrBadRecord] and does not quote the body.
func DecodeJSON[B any](r events.SQSMessage) (B, error) {
	var b B
	dec := json.NewDecoder(bytes.NewReader([]byte(r.Body)))
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%w: body is not JSON of the expected shape", ErrBadRecord)
	}
	if dec.More() {
		return b, fmt.Errorf("%w: body has more than one JSON value", ErrBadRecord)
	}
	return b, nil
}

// MessageAttribute returns a key function that takes the lock id from the
// string value of the record's message attribute name. A missing or
// non-string attribute is an error matching [ErrBadRecord]. The function
// is safe for concurrent use.
func MessageAttribute(name string) func(context.Context, events.SQSMessage) (string, error) {
	return func(_ context.Context, r events.SQSMessage) (string, error) {
		a, ok := r.MessageAttributes[name]
		if !ok || a.StringValue == nil {
			return "", fmt.Errorf("%w: no string attribute %q", ErrBadRecord, name)
		}
		return *a.StringValue, nil
	}
}
