package httpmw

import (
	"encoding/base64"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Request is the set of request event shapes the adapters take, for the
// key helpers that read any of them.
type Request interface {
	events.APIGatewayProxyRequest | events.APIGatewayV2HTTPRequest |
		events.LambdaFunctionURLRequest | events.ALBTargetGroupRequest
}

// view is what the key helpers read of a request, whatever its shape.
type view struct {
	method     string
	pathParams map[string]string
	query      map[string]string
	mvQuery    map[string][]string
	headers    map[string]string
	mvHeaders  map[string][]string
	cookies    []string // payload 2.0: the Cookie headers, split
	body       string
	base64     bool
	rawQuery   bool // ALB: query values are passed as the client sent them
}

// viewOf returns the view of req.
func viewOf[Req Request](req Req) view {
	switch r := any(req).(type) {
	case events.APIGatewayProxyRequest:
		return view{method: r.HTTPMethod, pathParams: r.PathParameters, query: r.QueryStringParameters, mvQuery: r.MultiValueQueryStringParameters,
			headers: r.Headers, mvHeaders: r.MultiValueHeaders, body: r.Body, base64: r.IsBase64Encoded}
	case events.APIGatewayV2HTTPRequest:
		return view{method: r.RequestContext.HTTP.Method, pathParams: r.PathParameters, query: r.QueryStringParameters, headers: r.Headers,
			cookies: r.Cookies, body: r.Body, base64: r.IsBase64Encoded}
	case events.LambdaFunctionURLRequest:
		return view{method: r.RequestContext.HTTP.Method, query: r.QueryStringParameters, headers: r.Headers, cookies: r.Cookies,
			body: r.Body, base64: r.IsBase64Encoded}
	case events.ALBTargetGroupRequest:
		return view{method: r.HTTPMethod, query: r.QueryStringParameters, mvQuery: r.MultiValueQueryStringParameters,
			headers: r.Headers, mvHeaders: r.MultiValueHeaders, body: r.Body, base64: r.IsBase64Encoded, rawQuery: true}
	}
	return view{}
}

// param returns the path parameter name.
func (v view) param(name string) (string, bool) {
	s, ok := v.pathParams[name]
	return s, ok
}

// queryValue returns the first value of the query parameter name: from
// the multi-value map when the event has one (a REST API's single-value
// map holds the last value of a repeated parameter), else the single
// value (payload 2.0 joins a repeated parameter's values with commas).
func (v view) queryValue(name string) (string, bool) {
	s, ok := "", false
	if vs := v.mvQuery[name]; len(vs) > 0 {
		s, ok = vs[0], true
	} else {
		s, ok = v.query[name]
	}
	if ok && v.rawQuery {
		u, err := url.QueryUnescape(s)
		if err != nil {
			return "", false
		}
		s = u
	}
	return s, ok
}

// header returns the first value of the header name, matched without
// regard to case, from the multi-value map first, as queryValue. Payload format 2.0 carries the Cookie header in its own
// field, split at "; ": it is joined again.
func (v view) header(name string) (string, bool) {
	if len(v.cookies) > 0 && strings.EqualFold(name, "cookie") {
		return strings.Join(v.cookies, "; "), true
	}
	for k, vs := range v.mvHeaders {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0], true
		}
	}
	for k, s := range v.headers {
		if strings.EqualFold(k, name) {
			return s, true
		}
	}
	return "", false
}

// bodyBytes returns the request body, decoded from base64 when the event
// says it is.
func (v view) bodyBytes() ([]byte, error) {
	if !v.base64 {
		return []byte(v.body), nil
	}
	return base64.StdEncoding.DecodeString(v.body)
}
