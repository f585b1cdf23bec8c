package httpmw

import (
	"encoding/base64"
	"mime"
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
