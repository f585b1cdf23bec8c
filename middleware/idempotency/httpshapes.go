package idempotency

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// httpRequest is what the HTTP layer reads of a request, whatever its
// shape.
type httpRequest struct {
	method, route, path string
	headers             map[string]string
	mvHeaders           map[string][]string
	body                string
	base64              bool
}

func requestOf[Req httpmw.Request](req Req) httpRequest {
	switch r := any(req).(type) {
	case events.APIGatewayProxyRequest:
		return httpRequest{method: r.HTTPMethod, route: r.Resource, path: r.Path, headers: r.Headers,
			mvHeaders: r.MultiValueHeaders, body: r.Body, base64: r.IsBase64Encoded}
	case events.APIGatewayV2HTTPRequest:
		return httpRequest{method: r.RequestContext.HTTP.Method, route: r.RouteKey, path: r.RawPath, headers: r.Headers,
			body: r.Body, base64: r.IsBase64Encoded}
	case events.LambdaFunctionURLRequest:
		return httpRequest{method: r.RequestContext.HTTP.Method, path: r.RawPath, headers: r.Headers,
			body: r.Body, base64: r.IsBase64Encoded}
	case events.ALBTargetGroupRequest:
		return httpRequest{method: r.HTTPMethod, path: r.Path, headers: r.Headers, mvHeaders: r.MultiValueHeaders,
			body: r.Body, base64: r.IsBase64Encoded}
	}
	return httpRequest{}
}

// key is the request's idempotency key, unquoted; "" when it has none.
func (r httpRequest) key() string {
	v, ok := "", false
	for k, s := range r.headers {
		if strings.EqualFold(k, HeaderIdempotencyKey) {
			v, ok = s, true
		}
	}
	for k, vs := range r.mvHeaders {
		if !ok && strings.EqualFold(k, HeaderIdempotencyKey) && len(vs) > 0 {
			v = vs[0]
		}
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return v
}

// scopedKey is the request's key scoped by its method and route.
func scopedKey(r httpRequest) (string, error) {
	key := r.key()
	if key == "" {
		return "", nil
	}
	if len(key) > MaxKeyBytes {
		return "", fmt.Errorf("%s header of %d bytes, at most %d", HeaderIdempotencyKey, len(key), MaxKeyBytes)
	}
	route := r.route
	if route == "" || route == "$default" {
		route = r.path
	}
	return strings.ToUpper(r.method) + " " + route + " " + key, nil
}

// payload is what the fingerprint covers: the path and the body, as
// JSON when it is JSON (so its canonical form is hashed).
func (r httpRequest) payload() any {
	body := []byte(r.body)
	if r.base64 {
		if b, err := base64.StdEncoding.DecodeString(r.body); err == nil {
			body = b
		}
	}
	p := struct {
		Path string `json:"path"`
		Body any    `json:"body"`
	}{Path: r.path, Body: string(body)}
	if json.Valid(body) {
		p.Body = json.RawMessage(body)
	}
	return p
}

// pairedShapes reports whether a request of q's shape is answered with a
// response of r's.
func pairedShapes(q, r any) bool {
	switch q.(type) {
	case events.APIGatewayProxyRequest:
		_, ok := r.(events.APIGatewayProxyResponse)
		return ok
	case events.APIGatewayV2HTTPRequest:
		_, ok := r.(events.APIGatewayV2HTTPResponse)
		return ok
	case events.LambdaFunctionURLRequest:
		_, ok := r.(events.LambdaFunctionURLResponse)
		return ok
	case events.ALBTargetGroupRequest:
		_, ok := r.(events.ALBTargetGroupResponse)
		return ok
	}
	return false
}

func statusOf(resp any) int {
	switch r := resp.(type) {
	case events.APIGatewayProxyResponse:
		return r.StatusCode
	case events.APIGatewayV2HTTPResponse:
		return r.StatusCode
	case events.LambdaFunctionURLResponse:
		return r.StatusCode
	case events.ALBTargetGroupResponse:
		return r.StatusCode
	}
	return 0
}

// withHeader returns resp with header k set to v, in a copy of its
// headers.
func withHeader[Resp HTTPResponse](resp Resp, k, v string) Resp {
	set := func(h map[string]string) map[string]string {
		h = maps.Clone(h)
		if h == nil {
			h = map[string]string{}
		}
		h[k] = v
		return h
	}
	var out any
	switch r := any(resp).(type) {
	case events.APIGatewayProxyResponse:
		r.Headers = set(r.Headers)
		if r.MultiValueHeaders != nil {
			r.MultiValueHeaders = maps.Clone(r.MultiValueHeaders)
			r.MultiValueHeaders[k] = []string{v}
		}
		out = r
	case events.APIGatewayV2HTTPResponse:
		r.Headers = set(r.Headers)
		out = r
	case events.LambdaFunctionURLResponse:
		r.Headers = set(r.Headers)
		out = r
	case events.ALBTargetGroupResponse:
		r.Headers = set(r.Headers)
		if r.MultiValueHeaders != nil {
			r.MultiValueHeaders = maps.Clone(r.MultiValueHeaders)
			r.MultiValueHeaders[k] = []string{v}
		}
		out = r
	}
	return out.(Resp)
}

// problemResponse is an error answer (RFC 9457), as httpmw writes them.
func problemResponse[Resp HTTPResponse](status int, code string, extra map[string]string) Resp {
	body, _ := json.Marshal(httpmw.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: code})
	h := map[string]string{"Content-Type": httpmw.ProblemContentType, "Cache-Control": "no-store"}
	maps.Copy(h, extra)
	var zero Resp
	var out any
	switch any(zero).(type) {
	case events.APIGatewayProxyResponse:
		out = events.APIGatewayProxyResponse{StatusCode: status, Headers: h, Body: string(body)}
	case events.APIGatewayV2HTTPResponse:
		out = events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(body)}
	case events.LambdaFunctionURLResponse:
		out = events.LambdaFunctionURLResponse{StatusCode: status, Headers: h, Body: string(body)}
	case events.ALBTargetGroupResponse:
		// Both header forms: a target group with multi-value headers on
		// reads only the multi-value one.
		mv := make(map[string][]string, len(h))
		for k, v := range h {
			mv[k] = []string{v}
		}
		out = events.ALBTargetGroupResponse{StatusCode: status, StatusDescription: fmt.Sprintf("%d %s", status, http.StatusText(status)),
			Headers: h, MultiValueHeaders: mv, Body: string(body)}
	}
	return out.(Resp)
}
