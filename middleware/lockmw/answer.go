package lockmw

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
)

// defaultMaxAnswerBytes is the largest inline answer, as stored in the lock
// item, when [Answers].MaxInlineBytes is not set: 64 KiB, well under
// DynamoDB's 400 KB item limit, because the answer's size is paid for on
// every request that touches the released item. Each waiter's read that
// sees the release costs 1 read unit per 4 KB (strongly consistent), so a
// 64 KiB answer costs 16 per waiter; the release writes it at 1 write unit
// per KB (64), and the next acquire, which replaces the item, is billed on
// the larger of the old and new item (64 again). With
// lockcore.WithFreshSuccess, each newcomer's refused acquire is billed on
// the existing item too: 64 write units for a cache hit instead of the 1
// of a small item.
const defaultMaxAnswerBytes = 64 << 10

// compressAbove is the encoded size above which an answer is compressed,
// and kept compressed only if that makes it smaller.
const compressAbove = 1 << 10

// maxDecodedAnswer bounds what a waiter decompresses, so that a corrupt or
// hostile item cannot make it allocate without limit.
const maxDecodedAnswer = 32 << 20

// Answer formats: the first byte of a stored answer.
const (
	answerRaw   byte = 'r' // the codec's bytes
	answerFlate byte = 'z' // the codec's bytes, compressed with DEFLATE (RFC 1951)
	answerRef   byte = 'x' // a reference: the stored answer is in the AnswerStore (see answerstore.go)
)

// errAnswerTooLarge: the encoded answer is over what the configuration
// can carry; it is not published and waiters get ErrNoAnswer.
var errAnswerTooLarge = errors.New("lockmw: answer too large to publish")

// encodeAnswer encodes v with codec and compresses it when that helps:
// the answer as stored, inline or by reference.
func encodeAnswer[T any](codec Codec[T], v T) ([]byte, error) {
	raw, err := codec.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("lockmw: encode answer: %w", err)
	}
	stored := append([]byte{answerRaw}, raw...)
	if len(raw) > compressAbove {
		if z, err := deflate(raw); err == nil && len(z) < len(stored) {
			stored = z
		}
	}
	return stored, nil
}

// deflate returns raw compressed, behind the answerFlate byte.
func deflate(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(raw)/2 + 16)
	b.WriteByte(answerFlate)
	zw, err := flate.NewWriter(&b, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// decodeAnswer reverses encodeAnswer.
func decodeAnswer[T any](codec Codec[T], stored []byte) (T, error) {
	var zero T
	if len(stored) == 0 {
		return zero, errors.New("empty answer")
	}
	raw := stored[1:]
	switch stored[0] {
	case answerRaw:
	case answerFlate:
		zr := flate.NewReader(bytes.NewReader(raw))
		b, err := io.ReadAll(io.LimitReader(zr, maxDecodedAnswer+1))
		if err != nil {
			return zero, fmt.Errorf("decompress answer: %w", err)
		}
		if len(b) > maxDecodedAnswer {
			return zero, fmt.Errorf("answer decompresses to more than %d bytes", maxDecodedAnswer)
		}
		raw = b
	default:
		return zero, fmt.Errorf("unknown answer format %q", stored[0])
	}
	v, err := codec.Decode(raw)
	if err != nil {
		return zero, fmt.Errorf("decode answer: %w", err)
	}
	return v, nil
}
