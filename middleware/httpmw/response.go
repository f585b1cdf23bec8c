package httpmw

import (
	"encoding/json"
	"net/http"
)

// Response is a handler's answer: the status and the body, which the
// [Codec] encodes. A zero Status is 200 (http.StatusOK).
type Response[T any] struct {
	Status int
	Body   T
}

// OK returns a [Response] with status 200 and body v.
func OK[T any](v T) Response[T] { return Response[T]{Status: http.StatusOK, Body: v} }

// Codec encodes a handler's [Response] body and names its media type.
// Encode must be safe for concurrent use.
type Codec interface {
	ContentType() string
	Encode(v any) ([]byte, error)
}

// JSONCodec is the default [Codec]: encoding/json, as application/json.
// The zero value is ready to use.
type JSONCodec struct{}

// ContentType returns "application/json".
func (JSONCodec) ContentType() string { return "application/json" }

// Encode returns json.Marshal(v).
func (JSONCodec) Encode(v any) ([]byte, error) { return json.Marshal(v) }
