package httpmw

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strings"
)

// encodeBody returns the body as the event response carries it: as it is
// for a textual media type or no body, else base64 with isBase64Encoded set.
func encodeBody(contentType string, body []byte) (string, bool) {
	if len(body) == 0 || textual(contentType) {
		return string(body), false
	}
	return base64.StdEncoding.EncodeToString(body), true
}

// textual reports whether a media type is text that API Gateway and ALB
// pass through unchanged: text/*, JSON, XML, JavaScript and form data.
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"), mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"), mt == "application/javascript",
		mt == "application/x-www-form-urlencoded":
		return true
	}
	return false
}

// Response limits of the fronts: a synchronous invocation's response is
// at most 6 MB ("Lambda quotas"; API Gateway, function URLs in buffered
// mode), an ALB target's response JSON at most 1 MB ("Lambda functions as
// targets of an Application Load Balancer").
const (
	invokeResponseLimit = 6 << 20
	albResponseLimit    = 1_000_000
	// responseOverhead bounds the response's fields other than the body.
	responseOverhead = 16 << 10
)

// fitted returns r and its body as the event response carries it, or,
// when the response would be over limit, the 500 no_answer answer: the
// front would refuse it and answer its own opaque 502.
func fitted(r reply, limit int) (reply, string, bool) {
	body, b64 := encodeBody(r.header["Content-Type"], r.body)
	// JSON escapes a byte in at most 6 (\u00XX), so a body under a sixth of
	// the limit fits without measuring.
	if len(body) <= (limit-responseOverhead)/6 {
		return r, body, b64
	}
	// Escaping only adds bytes: a body over the limit is not measured.
	if len(body)+responseOverhead <= limit {
		if quoted, err := json.Marshal(body); err == nil && len(quoted)+responseOverhead <= limit {
			return r, body, b64
		}
	}
	slog.Default().Error("httpmw: the answer is over the front's response limit; answered 500",
		slog.Int("bodyBytes", len(body)), slog.Int("limit", limit))
	p := problemReply(http.StatusInternalServerError, reasonNoAnswer, nil)
	body, b64 = encodeBody(p.header["Content-Type"], p.body)
	return p, body, b64
}
