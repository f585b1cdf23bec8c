package httpmw

import (
	"encoding/json"
	"net/http"
)

// ProblemContentType is the media type of every error answer (RFC 9457).
const ProblemContentType = "application/problem+json"

// Problem is the body of an error answer, as RFC 9457 defines it, with
// the failure code as an extension member. It carries no error text.
type Problem struct {
	Type   string `json:"type"`   // always "about:blank"
	Title  string `json:"title"`  // the status's reason phrase
	Status int    `json:"status"` // the HTTP status
	Code   string `json:"code"`   // the failure code, such as upstream_throttled
}

// problemReply is the error answer with status, code and extra headers.
func problemReply(status int, code string, header map[string]string) reply {
	body, _ := json.Marshal(Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: code})
	h := map[string]string{"Content-Type": ProblemContentType, "Cache-Control": "no-store"}
	for k, v := range header {
		h[k] = v
	}
	return reply{status: status, header: h, body: body}
}
