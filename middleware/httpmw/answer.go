package httpmw

import (
	"encoding/binary"
	"errors"
	"time"
)

// answer is what the holder publishes inline and every invocation of the
// burst answers with: the status, the media type and the encoded body,
// and when the holder's handler returned (for Cache-Control).
type answer struct {
	status      int
	contentType string
	body        []byte
	at          time.Time
}

// answerCodec is the lockmw codec of an answer: a version byte, the status
// (2 bytes), the time (8 bytes, Unix nanoseconds), the media type's length
// (2 bytes) and the media type, then the body, all big-endian. The body is
// stored as it is, not re-encoded.
type answerCodec struct{}

const (
	answerVersion = 1
	answerHeader  = 1 + 2 + 8 + 2
)

var errBadAnswer = errors.New("httpmw: malformed inline answer")

func (answerCodec) Encode(a answer) ([]byte, error) {
	if len(a.contentType) > 0xffff || a.status < 0 || a.status > 0xffff {
		return nil, errBadAnswer
	}
	b := make([]byte, 0, answerHeader+len(a.contentType)+len(a.body))
	b = append(b, answerVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(a.status))
	b = binary.BigEndian.AppendUint64(b, uint64(a.at.UnixNano()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(a.contentType)))
	b = append(b, a.contentType...)
	return append(b, a.body...), nil
}

func (answerCodec) Decode(data []byte) (answer, error) {
	if len(data) < answerHeader || data[0] != answerVersion {
		return answer{}, errBadAnswer
	}
	status := int(binary.BigEndian.Uint16(data[1:3]))
	at := time.Unix(0, int64(binary.BigEndian.Uint64(data[3:11])))
	n := int(binary.BigEndian.Uint16(data[11:13]))
	if len(data) < answerHeader+n || status < 100 || status > 599 {
		return answer{}, errBadAnswer
	}
	ct := string(data[answerHeader : answerHeader+n])
	body := append([]byte(nil), data[answerHeader+n:]...)
	return answer{status: status, contentType: ct, body: body, at: at}, nil
}
