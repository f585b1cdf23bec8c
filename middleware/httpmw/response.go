package httpmw

import (
	"encoding/json"
	"net/http"
)

// Response is a handler's answer: the status and the body, which the
// [BodyCodec] encodes. A zero Status is 200 (http.StatusOK).
type Response[T any] struct {
	Status int
	Body   T
}

// OK returns a [Response] with status 200 and body v.
func OK[T any](v T) Response[T] { return Response[T]{Status: http.StatusOK, Body: v} }

// BodyCodec encodes a handler's [Response] body and names its media type
// (see [WithCodec]). Encode must be safe for concurrent use.
type BodyCodec interface {
	ContentType() string
	Encode(v any) ([]byte, error)
}

// jsonCodec is the default [BodyCodec]: encoding/json, as application/json.
type jsonCodec struct{}

func (jsonCodec) ContentType() string { return "application/json" }

func (jsonCodec) Encode(v any) ([]byte, error) { return json.Marshal(v) }
