package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Latency returns an http.RoundTripper that makes every request through
// next take latency() as a table in a brownout does: half of it before the
// request goes on, half after its answer. The request goes on, and is
// applied, even when its client gave up meanwhile; the client gets its
// context's error as soon as its context ends, the answer never. Use it
// in front of [HandlerTransport] or of a real server's transport, in or
// out of a synctest bubble.
func Latency(next http.RoundTripper, latency func() time.Duration) http.RoundTripper {
	return latencyTransport{next: next, latency: latency}
}

type latencyTransport struct {
	next    http.RoundTripper
	latency func() time.Duration
}

type roundTrip struct {
	resp *http.Response
	err  error
}

func (t latencyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	d := t.latency()
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	done := make(chan roundTrip, 1)
	out := r.Clone(context.WithoutCancel(r.Context())) // the server goes on when the client gives up
	go func() {
		time.Sleep(d / 2)
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		resp, err := t.next.RoundTrip(out)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
		}
		time.Sleep(d - d/2)
		done <- roundTrip{resp, err}
	}()
	select {
	case rt := <-done:
		if rt.resp != nil {
			rt.resp.Request = r
		}
		return rt.resp, rt.err
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
}

// DeniedRole is the role that [Deny]'s answers name, as DynamoDB's
// AccessDeniedException message names the caller's role.
const DeniedRole = "arn:aws:sts::000000000000:assumed-role/herdlock-test/denied"

// Deny returns an http.RoundTripper that answers the operations in ops
// (X-Amz-Target names, such as "UpdateItem") itself, as DynamoDB answers a
// role whose policy does not allow them: HTTP 400 with the JSON body of an
// AccessDeniedException (its __type, and a message naming the role and the
// table), a request id and a correct x-amz-crc32. Other requests go to
// next.
func Deny(next http.RoundTripper, ops ...string) http.RoundTripper {
	m := map[string]bool{}
	for _, op := range ops {
		m[op] = true
	}
	return denyTransport{next: next, ops: m}
}

type denyTransport struct {
	next http.RoundTripper
	ops  map[string]bool
}

func (t denyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	if !t.ops[op] {
		return t.next.RoundTrip(r)
	}
	var req request
	if r.Body != nil {
		_ = json.NewDecoder(r.Body).Decode(&req)
		_ = r.Body.Close()
	}
	body, err := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"Message"`
	}{"com.amazon.coral.service#AccessDeniedException",
		fmt.Sprintf("User: %s is not authorized to perform: dynamodb:%s on resource: arn:aws:dynamodb:%s:%s:table/%s because no identity-based policy allows the dynamodb:%s action",
			DeniedRole, op, DefaultRegion, DefaultAccount, req.TableName, op)})
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", jsonContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("x-amzn-RequestId", requestID())
	h.Set("x-amz-crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	return &http.Response{
		Status: "400 Bad Request", StatusCode: http.StatusBadRequest, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}, nil
}
