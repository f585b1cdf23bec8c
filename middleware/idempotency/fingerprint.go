package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
