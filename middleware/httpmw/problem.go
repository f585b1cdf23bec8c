package httpmw

import (
	"encoding/json"
	"net/http"
)

// problemContentType is the media type of every error answer (RFC 9457).
const problemContentType = "application/problem+json"

// Problem is the body of an error answer, as RFC 9457 defines it, with
// the failure reason as an extension member. It carries no error text.
// Its media type is application/problem+json.
type Problem struct {
	Type   string `json:"type"`   // always "about:blank"
	Title  string `json:"title"`  // the status's reason phrase
	Status int    `json:"status"` // the HTTP status
	Reason string `json:"code"`   // the failure reason, such as upstream_throttled
}

// problemReply is the error answer with status, reason and extra headers.
func problemReply(status int, reason string, header map[string]string) reply {
	body, _ := json.Marshal(Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Reason: reason})
	h := map[string]string{"Content-Type": problemContentType, "Cache-Control": "no-store"}
	for k, v := range header {
		h[k] = v
	}
	return reply{status: status, header: h, body: body}
}
