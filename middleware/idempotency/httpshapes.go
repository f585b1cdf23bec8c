package idempotency

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// httpRequest is what the HTTP layer reads of a request, whatever its
// shape.
type httpRequest struct {
	method, route, path string
	caller              string // who the authorizer says sent it; "" when the request says nothing
	headers             map[string]string
	mvHeaders           map[string][]string
	query               url.Values // nil when the request has none
	body                string
	base64              bool
}

func requestOf[Req httpmw.Request](req Req) httpRequest {
	switch r := any(req).(type) {
	case events.APIGatewayProxyRequest:
		return httpRequest{method: r.HTTPMethod, route: r.Resource, path: r.Path, caller: restCaller(r.RequestContext), headers: r.Headers,
			mvHeaders: r.MultiValueHeaders, query: queryOf(r.MultiValueQueryStringParameters, r.QueryStringParameters),
			body: r.Body, base64: r.IsBase64Encoded}
	case events.APIGatewayV2HTTPRequest:
		return httpRequest{method: r.RequestContext.HTTP.Method, route: r.RouteKey, path: r.RawPath, caller: httpAPICaller(r.RequestContext.Authorizer), headers: r.Headers,
			query: rawQuery(r.RawQueryString), body: r.Body, base64: r.IsBase64Encoded}
	case events.LambdaFunctionURLRequest:
		return httpRequest{method: r.RequestContext.HTTP.Method, path: r.RawPath, caller: functionURLCaller(r.RequestContext.Authorizer), headers: r.Headers,
			query: rawQuery(r.RawQueryString), body: r.Body, base64: r.IsBase64Encoded}
	case events.ALBTargetGroupRequest:
		return httpRequest{method: r.HTTPMethod, path: r.Path, headers: r.Headers, mvHeaders: r.MultiValueHeaders,
			query: queryOf(r.MultiValueQueryStringParameters, r.QueryStringParameters), body: r.Body, base64: r.IsBase64Encoded}
	}
	return httpRequest{}
}

// callerOf names the authenticated caller by the parts given as name,
// value pairs that are not empty: what stays the same across a caller's
// retries (a JWT's issuer and subject, not the token; an IAM role, not
// its session); "" when there are none.
func callerOf(parts ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(parts); i += 2 {
		if parts[i+1] != "" {
			fmt.Fprintf(&b, "%s=%q;", parts[i], parts[i+1])
		}
	}
	return b.String()
}

func restCaller(rc events.APIGatewayProxyRequestContext) string {
	principal, _ := rc.Authorizer["principalId"].(string)
	claims, _ := rc.Authorizer["claims"].(map[string]any)
	iss, _ := claims["iss"].(string)
	sub, _ := claims["sub"].(string)
	return callerOf("principal", principal, "iss", iss, "sub", sub, "cognito", rc.Identity.CognitoIdentityID,
		"apiKey", rc.Identity.APIKeyID, "iam", iamPrincipal(rc.Identity.UserArn))
}

// iamPrincipal is the IAM caller of an ARN as it stays across a caller's
// retries: a role assumed, without its session name (new credentials
// for the role may carry another), an IAM user or a root, as it is. Not
// its account alone: two roles of one account are two callers.
func iamPrincipal(arn string) string {
	// arn:aws:sts::123456789012:assumed-role/RoleName/SessionName
	if head, path, ok := strings.Cut(arn, ":assumed-role/"); ok {
		role, _, _ := strings.Cut(path, "/")
		return head + ":assumed-role/" + role
	}
	return arn
}

func httpAPICaller(a *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) string {
	if a == nil {
		return ""
	}
	var iss, sub, principal, cognito string
	if a.JWT != nil {
		iss, sub = a.JWT.Claims["iss"], a.JWT.Claims["sub"]
	}
	if a.IAM != nil {
		principal, cognito = iamPrincipal(a.IAM.UserARN), a.IAM.CognitoIdentity.IdentityID
	}
	return callerOf("iss", iss, "sub", sub, "cognito", cognito, "iam", principal)
}

func functionURLCaller(a *events.LambdaFunctionURLRequestContextAuthorizerDescription) string {
	if a == nil || a.IAM == nil {
		return ""
	}
	return callerOf("iam", iamPrincipal(a.IAM.UserARN))
}

// queryOf is a request's query from its multi-value parameters, else its
// single-value ones; nil when it has none.
func queryOf(mv map[string][]string, single map[string]string) url.Values {
	if len(mv) > 0 {
		return url.Values(mv)
	}
	if len(single) == 0 {
		return nil
	}
	q := make(url.Values, len(single))
	for k, v := range single {
		q[k] = []string{v}
	}
	return q
}

// rawQuery is the query of a raw query string; one that does not parse
// is kept whole, under the empty name.
func rawQuery(raw string) url.Values {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return url.Values{"": {raw}}
	}
	return q
}

// errKeySyntax is a header value that is not one sf-string.
var errKeySyntax = errors.New("the " + headerIdempotencyKey + " header is not one structured-field string")

// key is the request's idempotency key, unquoted; "" when it has none. A
// header sent twice, as two values or joined by a comma, is an error.
func (r httpRequest) key() (string, error) {
	var values []string
	for k, vs := range r.mvHeaders {
		if strings.EqualFold(k, headerIdempotencyKey) {
			values = append(values, vs...)
		}
	}
	if len(values) == 0 { // the single-value form holds the last of them
		for k, v := range r.headers {
			if strings.EqualFold(k, headerIdempotencyKey) {
				values = append(values, v)
			}
		}
	}
	switch len(values) {
	case 0:
		return "", nil
	case 1:
		return parseKey(values[0])
	}
	return "", fmt.Errorf("%w: sent %d times", errKeySyntax, len(values))
}

// noKey reports whether the request has no idempotency key: no header,
// or an empty one. A malformed header is a key, answered 400.
func (r httpRequest) noKey() bool {
	k, err := r.key()
	return k == "" && err == nil
}

// parseKey reads a header value as an RFC 8941 sf-string (§4.2.5:
// printable ASCII, the escapes \" and \\ only), its parameters ignored;
// or, leniently, a bare value of visible ASCII without a quote, a comma,
// a semicolon or a backslash as the string of the same characters.
func parseKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", nil
	}
	if v[0] != '"' {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
				return "", errKeySyntax
			}
		}
		return v, nil
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			if i+1 == len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
				return "", errKeySyntax
			}
			i++
			b.WriteByte(v[i])
		case c == '"':
			if rest := v[i+1:]; rest != "" && (rest[0] != ';' || strings.ContainsAny(rest, ",")) {
				return "", errKeySyntax // a second member, or text after the string
			}
			return b.String(), nil
		case c < ' ' || c >= 0x7f:
			return "", errKeySyntax
		default:
			b.WriteByte(c)
		}
	}
	return "", errKeySyntax // no closing quote
}

// scopedKey is the request's key scoped by its method and route.
func scopedKey(r httpRequest) (string, error) {
	key, err := r.key()
	if key == "" || err != nil {
		return "", err
	}
	if len(key) > maxKeyBytes {
		return "", fmt.Errorf("%s header of %d bytes, at most %d", headerIdempotencyKey, len(key), maxKeyBytes)
	}
	route := r.route
	if route == "" || route == "$default" {
		route = r.path
	}
	scope := strings.ToUpper(r.method) + " " + route
	if r.caller != "" { // by its hash: no claims in the records' ids and logs
		sum := sha256.Sum256([]byte(r.caller))
		scope += " caller:" + base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if len(scope) > maxScopeBytes { // a long path: its hash, so that the key fits
		sum := sha256.Sum256([]byte(scope))
		scope = fingerprintPrefix + base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return scope + " " + key, nil
}

// maxScopeBytes is the longest method and route that a scoped key holds
// as they are: with a key of maxKeyBytes well inside a key function's
// 1 KiB.
const maxScopeBytes = 512

// payload is what the fingerprint covers: the path, the query (its
// parameters in any order) and the body (see bodyOf).
func (r httpRequest) payload() any {
	body := []byte(r.body)
	if r.base64 {
		if b, err := base64.StdEncoding.DecodeString(r.body); err == nil {
			body = b
		}
	}
	return struct {
		Path  string              `json:"path"`
		Query map[string][]string `json:"query,omitempty"`
		bodyPayload
	}{Path: r.path, Query: r.query, bodyPayload: bodyOf(body)}
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
// headers; in the multi-value form too when resp has one or multiValue
// says that the request came in it (an ALB target group with
// multi-value headers on reads only that form of the response).
func withHeader[Resp HTTPResponse](resp Resp, k, v string, multiValue bool) Resp {
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
		if r.MultiValueHeaders != nil || multiValue {
			r.MultiValueHeaders = maps.Clone(r.MultiValueHeaders)
			if r.MultiValueHeaders == nil {
				r.MultiValueHeaders = map[string][]string{}
			}
			r.MultiValueHeaders[k] = []string{v}
		}
		out = r
	}
	return out.(Resp)
}

// problemResponse is an error answer (RFC 9457), as httpmw writes them.
func problemResponse[Resp HTTPResponse](status int, code string, extra map[string]string) Resp {
	body, _ := json.Marshal(httpmw.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Reason: code})
	h := map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store"}
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
