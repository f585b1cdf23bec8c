package lockmw

import (
	"encoding/json"
)

// Codec turns a handler's result into bytes and back, for the answer that
// the holder publishes in the lock item and the waiters return (see
// [Handlers].Codec). Encode and Decode must be safe for concurrent use, and
// Decode(Encode(v)) must give a value the waiters can return in place of
// v.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSONCodec is the default [Codec]: encoding/json. The zero value is ready
// to use and safe for concurrent use.
type JSONCodec[T any] struct{}

// Encode implements [Codec] with json.Marshal.
func (JSONCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode implements [Codec] with json.Unmarshal.
func (JSONCodec[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}
