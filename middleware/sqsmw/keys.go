package sqsmw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// JSONBody returns a key function that decodes a record's body as one JSON
// value into a B and takes the lock id from it with key. A body that is
// not JSON of B's shape is an error matching lockmw.ErrKey, which fails
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
// lockmw.ErrKey and does not quote the body.
func DecodeJSON[B any](r events.SQSMessage) (B, error) {
	var b B
	dec := json.NewDecoder(bytes.NewReader([]byte(r.Body)))
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%w: body is not JSON of the expected shape", lockmw.ErrKey)
	}
	if dec.More() {
		return b, fmt.Errorf("%w: body has more than one JSON value", lockmw.ErrKey)
	}
	return b, nil
}

// MessageAttribute returns a key function that takes the lock id from the
// string value of the record's message attribute name. A missing or
// non-string attribute is an error matching lockmw.ErrKey. The function
// is safe for concurrent use.
func MessageAttribute(name string) func(context.Context, events.SQSMessage) (string, error) {
	return func(_ context.Context, r events.SQSMessage) (string, error) {
		a, ok := r.MessageAttributes[name]
		if !ok || a.StringValue == nil {
			return "", fmt.Errorf("%w: no string attribute %q", lockmw.ErrKey, name)
		}
		return *a.StringValue, nil
	}
}
