package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// fingerprintPrefix names the hash of a stored fingerprint.
const fingerprintPrefix = "sha256:"

// fingerprint is the canonical hash of payload: its JSON with the keys of
// every object sorted and numbers as written, hashed with SHA-256. Two
// payloads that differ only in key order or white space (a json.RawMessage
// body sent by another client) have the same fingerprint.
func fingerprint(payload any) (string, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("idempotency: payload fingerprint: %w", err)
	}
	if !utf8.Valid(raw) {
		// A json.RawMessage of bytes that are not UTF-8 (encoding/json
		// checks its syntax only): decoding would write each of them as
		// U+FFFD, and two such payloads would share a fingerprint. Its
		// bytes are hashed as they are, apart from every canonical form.
		sum := sha256.Sum256(append([]byte("bytes\x00"), raw...))
		return fingerprintPrefix + base64.RawURLEncoding.EncodeToString(sum[:]), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return "", fmt.Errorf("idempotency: payload fingerprint: %w", err)
	}
	// encoding/json writes the keys of a map sorted.
	canonical, err := json.Marshal(tree)
	if err != nil {
		return "", fmt.Errorf("idempotency: payload fingerprint: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return fingerprintPrefix + base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// bodyPayload is what a fingerprint covers of a request or message body.
type bodyPayload struct {
	JSON  json.RawMessage `json:"body,omitempty"`  // a JSON body
	Text  *string         `json:"text,omitempty"`  // any other UTF-8 body, also none
	Bytes []byte          `json:"bytes,omitempty"` // any other body
}

// bodyOf is the fingerprinted form of body: as bytes when it is not
// UTF-8 (encoding/json would write every byte that is not UTF-8 as
// U+FFFD, also in a body of JSON syntax), else as JSON when it is JSON
// (so that its canonical form is hashed: keys in any order, any white
// space), else as text, apart (the text abc is not the JSON string
// "abc").
func bodyOf(body []byte) bodyPayload {
	switch {
	case !utf8.Valid(body):
		return bodyPayload{Bytes: body}
	case json.Valid(body):
		return bodyPayload{JSON: json.RawMessage(body)}
	default:
		text := string(body)
		return bodyPayload{Text: &text}
	}
}
