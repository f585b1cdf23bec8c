package httpmw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// PathParam returns a key function that takes the lock id from the path
// parameter name (API Gateway's {name} in the route, in PathParameters).
// A missing or blank parameter is an error matching [ErrBadRequest],
// answered 400. Function URLs and ALB targets have no path parameters:
// with them every request is answered 400. The function is safe for
// concurrent use.
func PathParam[Req Request](name string) func(context.Context, Req) (string, error) {
	return func(_ context.Context, req Req) (string, error) {
		s, _ := viewOf(req).param(name)
		return nonBlank(s, "path parameter", name)
	}
}

// Query returns a key function that takes the lock id from the first value
// of the query string parameter name (from multiValueQueryStringParameters
// when the event has them; payload format 2.0 joins a repeated
// parameter's values with commas, and that joined value is the id); for
// ALB targets it is URL-decoded first (ALB passes it as the client sent
// it). A missing, blank or
// undecodable parameter is an error matching [ErrBadRequest]. The
// function is safe for concurrent use.
func Query[Req Request](name string) func(context.Context, Req) (string, error) {
	return func(_ context.Context, req Req) (string, error) {
		s, _ := viewOf(req).queryValue(name)
		return nonBlank(s, "query parameter", name)
	}
}

// Header returns a key function that takes the lock id from the first
// value of the header name, matched without regard to case (payload
// format 2.0 carries the Cookie header in its cookies field, which Header
// joins again with "; "). A missing or
// blank header is an error matching [ErrBadRequest]. The function is safe
// for concurrent use.
func Header[Req Request](name string) func(context.Context, Req) (string, error) {
	return func(_ context.Context, req Req) (string, error) {
		s, _ := viewOf(req).header(name)
		return nonBlank(s, "header", name)
	}
}

// JSONBody returns a key function that decodes the request body (from
// base64 when the event says so) as JSON into a B and takes the lock id
// from it with key. A body that is not one JSON value of B's shape is an
// error matching [ErrBadRequest]. The function is safe for concurrent use
// when key is.
func JSONBody[Req Request, B any](key func(B) (string, error)) func(context.Context, Req) (string, error) {
	return func(_ context.Context, req Req) (string, error) {
		b, err := DecodeJSON[B](req)
		if err != nil {
			return "", err
		}
		return key(b)
	}
}

// DecodeJSON decodes the body of req as one JSON value into a B, for a
// handler that reads the body the key function read. An error matches
// [ErrBadRequest] and does not quote the body.
func DecodeJSON[B any, Req Request](req Req) (B, error) {
	var b B
	raw, err := viewOf(req).bodyBytes()
	if err != nil {
		return b, fmt.Errorf("%w: body is not valid base64", ErrBadRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%w: body is not JSON of the expected shape", ErrBadRequest)
	}
	if dec.More() {
		return b, fmt.Errorf("%w: body has more than one JSON value", ErrBadRequest)
	}
	return b, nil
}

// nonBlank returns s trimmed, or an error naming what is missing.
func nonBlank(s, what, name string) (string, error) {
	if s = strings.TrimSpace(s); s == "" {
		return "", fmt.Errorf("%w: missing %s %q", ErrBadRequest, what, name)
	}
	return s, nil
}
