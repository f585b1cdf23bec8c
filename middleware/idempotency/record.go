package idempotency

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// record is what a holder publishes, inline in the lock item, with its
// success: the answer and what a replay checks it by.
type record[TOut any] struct {
	fingerprint   string // of the payload that produced the answer
	completedAtMs int64  // the holder's wall clock when its handler returned, Unix ms
	fence         int64  // the holder's fencing token
	out           TOut
}

// completedAt is the record's completion time.
func (r record[TOut]) completedAt() time.Time { return time.UnixMilli(r.completedAtMs) }

// recordVersion starts every encoded record.
const recordVersion = "idem1"

// recordCodec encodes a record as one header line, "idem1 <fingerprint>
// <completedAtMs> <fence>", followed by the answer in the inner codec's
// bytes. lockmw compresses the whole when that is smaller.
type recordCodec[TOut any] struct{ inner lockmw.Codec[TOut] }

var errBadRecord = errors.New("not an idempotency record")

// Encode implements lockmw.Codec.
func (c recordCodec[TOut]) Encode(r record[TOut]) ([]byte, error) {
	raw, err := c.inner.Encode(r.out)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(raw) + 80)
	fmt.Fprintf(&b, "%s %s %d %d\n", recordVersion, r.fingerprint, r.completedAtMs, r.fence)
	b.Write(raw)
	return b.Bytes(), nil
}

// Decode implements lockmw.Codec.
func (c recordCodec[TOut]) Decode(data []byte) (record[TOut], error) {
	var r record[TOut]
	head, raw, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return r, errBadRecord
	}
	f := strings.Fields(string(head))
	if len(f) != 4 || f[0] != recordVersion || !strings.HasPrefix(f[1], fingerprintPrefix) {
		return r, errBadRecord
	}
	at, err1 := strconv.ParseInt(f[2], 10, 64)
	fence, err2 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return r, fmt.Errorf("%w: %w", errBadRecord, err)
	}
	out, err := c.inner.Decode(raw)
	if err != nil {
		return r, err
	}
	return record[TOut]{fingerprint: f[1], completedAtMs: at, fence: fence, out: out}, nil
}
