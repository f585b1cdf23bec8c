// Package answer is the one format in which the fronts (httpmw, sqsmw)
// publish a holder's answer in the lock item, so that fronts sharing a
// lock group read each other's success: an HTTP answer (method class,
// status, media type, body, time) or, from a front that has none (a queue
// refresher), a bare success.
package answer

import (
	"encoding/binary"
	"errors"
	"time"
)

// Answer is what a holder publishes with its success.
type Answer struct {
	// Method is the method class of the request whose handler produced the
	// answer: "GET" for GET and HEAD (a HEAD is answered as the GET it
	// mirrors, RFC 9110 §9.3.2), the method otherwise; "" when the front
	// has no HTTP answer (Done).
	Method      string
	Status      int
	ContentType string
	Body        []byte
	At          time.Time // when the holder's handler returned
}

// Done is the answer of a front without an HTTP answer: the key's work is
// done, there is nothing to send. An HTTP reader runs its own handler for
// it.
var Done = Answer{}

// HasHTTP reports whether a carries an HTTP answer.
func (a Answer) HasHTTP() bool { return a.Status != 0 }

// Codec is the lockmw codec of an [Answer]: a version byte (2), the method
// class's length (1 byte) and the method, the status (2 bytes, 0 for
// Done), the time (8 bytes, Unix nanoseconds), the media type's length (2
// bytes) and the media type, then the body, all big-endian. The body is
// stored as it is. The formats before this one are still read, for the
// fresh-success window of a deployment: httpmw's version 1 (no method, a
// GET's answer) and sqsmw's "{}" (Done).
type Codec struct{}

const (
	version   = 2
	versionV1 = 1
	headerV1  = 1 + 2 + 8 + 2
)

// ErrMalformed is the error of an answer that is not in this format.
var ErrMalformed = errors.New("answer: malformed answer")

// Encode implements lockmw.Codec.
func (Codec) Encode(a Answer) ([]byte, error) {
	if len(a.Method) > 0xff || len(a.ContentType) > 0xffff || a.Status < 0 || a.Status > 0xffff {
		return nil, ErrMalformed
	}
	b := make([]byte, 0, 2+len(a.Method)+12+len(a.ContentType)+len(a.Body))
	b = append(b, version, byte(len(a.Method)))
	b = append(b, a.Method...)
	b = binary.BigEndian.AppendUint16(b, uint16(a.Status))
	var at int64
	if !a.At.IsZero() {
		at = a.At.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint16(b, uint16(len(a.ContentType)))
	b = append(b, a.ContentType...)
	return append(b, a.Body...), nil
}

// Decode implements lockmw.Codec.
func (Codec) Decode(data []byte) (Answer, error) {
	switch {
	case len(data) > 0 && data[0] == versionV1:
		return decodeV1(data)
	case string(data) == "{}":
		return Done, nil // sqsmw's first format: the JSON of struct{}
	}
	if len(data) < 2 || data[0] != version {
		return Answer{}, ErrMalformed
	}
	m := int(data[1])
	rest := data[2:]
	if len(rest) < m+12 {
		return Answer{}, ErrMalformed
	}
	a := Answer{Method: string(rest[:m])}
	rest = rest[m:]
	a.Status = int(binary.BigEndian.Uint16(rest[0:2]))
	if at := int64(binary.BigEndian.Uint64(rest[2:10])); at != 0 {
		a.At = time.Unix(0, at)
	}
	n := int(binary.BigEndian.Uint16(rest[10:12]))
	rest = rest[12:]
	if len(rest) < n || (a.Status != 0 && (a.Status < 100 || a.Status > 599)) {
		return Answer{}, ErrMalformed
	}
	a.ContentType = string(rest[:n])
	a.Body = append([]byte(nil), rest[n:]...)
	return a, nil
}

// decodeV1 reads httpmw's first format: a GET's answer.
func decodeV1(data []byte) (Answer, error) {
	if len(data) < headerV1 {
		return Answer{}, ErrMalformed
	}
	status := int(binary.BigEndian.Uint16(data[1:3]))
	at := time.Unix(0, int64(binary.BigEndian.Uint64(data[3:11])))
	n := int(binary.BigEndian.Uint16(data[11:13]))
	if len(data) < headerV1+n || status < 100 || status > 599 {
		return Answer{}, ErrMalformed
	}
	return Answer{Method: "GET", Status: status, ContentType: string(data[headerV1 : headerV1+n]),
		Body: append([]byte(nil), data[headerV1+n:]...), At: at}, nil
}
