package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/sandbox"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// httpAnswers decodes the HTTP API responses of a burst.
func httpAnswers(t *testing.T, invs []sandbox.Invocation) []events.APIGatewayV2HTTPResponse {
	t.Helper()
	out := make([]events.APIGatewayV2HTTPResponse, len(invs))
	for i, inv := range invs {
		if inv.Err != nil || inv.FunctionError {
			t.Fatalf("sandbox %d: %v, function error %t: %s; want an HTTP answer", inv.Sandbox, inv.Err, inv.FunctionError, inv.Body)
		}
		if err := json.Unmarshal(inv.Body, &out[i]); err != nil || out[i].StatusCode == 0 {
			t.Fatalf("sandbox %d: answer %s: %v", inv.Sandbox, inv.Body, err)
		}
	}
	return out
}

func TestEndToEndHTTPFront(t *testing.T) {
	stack := newEmulatorStack(t)
	const key = "EUR-USD"

	t.Run("a herd of HTTP API requests: one upstream call, identical 200s", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: burstSize, Upstream: sandbox.UpstreamConfig{Latency: 300 * time.Millisecond}})
		resps := httpAnswers(t, r.Pool.Burst(burstContext(t), localrun.HTTPAPIEvents(key, burstSize)))
		if got := r.Upstream.RequestsFor(key); got != 1 {
			t.Errorf("upstream requests = %d, want 1", got)
		}
		for i, resp := range resps {
			if resp.StatusCode != 200 || resp.Body != resps[0].Body || resp.Headers["Content-Type"] != "application/json" {
				t.Errorf("answer %d: %d %q %s, want 200 application/json %s", i, resp.StatusCode, resp.Headers["Content-Type"], resp.Body, resps[0].Body)
			}
			if resp.Headers["Cache-Control"] == "" {
				t.Errorf("answer %d: no Cache-Control", i)
			}
		}
		var body fetchcache.Response
		if err := json.Unmarshal([]byte(resps[0].Body), &body); err != nil || body.Pair != key || len(body.Data) == 0 {
			t.Errorf("body %s: %v; want the %s quote", resps[0].Body, err, key)
		}
		t.Logf("burst of %d HTTP API requests: %d upstream call, answers %d x %d", burstSize, r.Upstream.RequestsFor(key), len(resps), resps[0].StatusCode)
	})

	t.Run("a HEAD is the GET's answer without content; a malformed pair is 400 problem+json, logged at Warn", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: 1})
		get := httpAnswers(t, r.Pool.Burst(burstContext(t), localrun.HTTPAPIEvents("GBP-USD", 1)))[0]
		head := httpAnswers(t, r.Pool.Burst(burstContext(t), withMethod(t, localrun.HTTPAPIEvents("GBP-USD", 1), "HEAD")))[0]
		if get.StatusCode != 200 || head.StatusCode != 200 || head.Body != "" || head.Headers["Content-Type"] != get.Headers["Content-Type"] {
			t.Errorf("GET %d %q, HEAD %d %q body %q; want the GET's status and media type, no body",
				get.StatusCode, get.Headers["Content-Type"], head.StatusCode, head.Headers["Content-Type"], head.Body)
		}
		if got := r.Upstream.RequestsFor("GBP-USD"); got != 1 {
			t.Errorf("upstream requests = %d, want 1 (the HEAD answered from the GET's)", got)
		}
		bad := httpAnswers(t, r.Pool.Burst(burstContext(t), localrun.HTTPAPIEvents("EUR%2FUSD!", 1)))[0]
		var p httpmw.Problem
		if err := json.Unmarshal([]byte(bad.Body), &p); err != nil || bad.StatusCode != 400 || p.Reason != "bad_request" ||
			bad.Headers["Content-Type"] != "application/problem+json" {
			t.Errorf("malformed pair: %d %q %s, want 400 problem+json %s", bad.StatusCode, bad.Headers["Content-Type"], bad.Body, "bad_request")
		}
		for _, l := range r.Pool.Lines() {
			if bytes.Contains([]byte(l.Text), []byte(`"level":"ERROR"`)) {
				t.Errorf("a line at Error: %s", l.Text)
			}
		}
	})

	t.Run("an upstream answering 429 with Retry-After: every client gets 429 and a Retry-After no shorter", func(t *testing.T) {
		const retryAfter = 8 * time.Second // longer than a 6 s function can wait
		r := stack.start(t, localrun.Options{N: burstSize, Timeout: 6 * time.Second,
			Upstream: sandbox.UpstreamConfig{ThrottleFirst: retryAfter, RetryAfter: retryAfter}})
		warmUp(t, r)
		invs := r.Pool.Burst(burstContext(t), localrun.HTTPAPIEvents(key, burstSize))
		resps := httpAnswers(t, invs)
		calls := r.Upstream.ArrivalsFor(key)
		if len(calls) != 1 || !calls[0].Rejected || calls[0].RetryAfter != "8" {
			t.Fatalf("upstream calls %+v, want one refused with Retry-After 8", calls)
		}
		// The upstream asked for no call before calls[0].At + 8 s; each
		// client, counting its Retry-After from when it got its answer,
		// must not be told an earlier time.
		earliest := calls[0].At.Add(retryAfter)
		var ras []int
		for i, resp := range resps {
			ra, err := strconv.Atoi(resp.Headers["Retry-After"])
			ras = append(ras, ra)
			if resp.StatusCode != 429 || err != nil {
				t.Errorf("answer %d: %d Retry-After %q, want 429 with a Retry-After", i, resp.StatusCode, resp.Headers["Retry-After"])
				continue
			}
			if told := invs[i].End.Add(time.Duration(ra) * time.Second); told.Before(earliest) {
				t.Errorf("answer %d at %v: Retry-After %d names %v, before the upstream's %v", i, invs[i].End, ra, told, earliest)
			}
			var p httpmw.Problem
			if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || p.Reason != fetchcache.CodeThrottled || resp.Headers["Content-Type"] != "application/problem+json" {
				t.Errorf("answer %d: %q %s, want a problem with code %s", i, resp.Headers["Content-Type"], resp.Body, fetchcache.CodeThrottled)
			}
			if bytes.Contains([]byte(resp.Body), []byte("127.0.0.1")) || bytes.Contains([]byte(resp.Body), []byte("Too Many Requests\\n")) {
				t.Errorf("answer %d carries the upstream's URL or body: %s", i, resp.Body)
			}
		}
		t.Logf("burst of %d: %d upstream call (Retry-After %s), answers 429 with Retry-After %v", burstSize, len(calls), calls[0].RetryAfter, ras)
	})
}

// withMethod sets the method of HTTP API events.
func withMethod(t *testing.T, evs [][]byte, method string) [][]byte {
	t.Helper()
	for i, raw := range evs {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		ev.RequestContext.HTTP.Method = method
		evs[i], _ = json.Marshal(ev)
	}
	return evs
}

// sqsEvent is an SQS batch of refreshes, as Lambda's event source mapping
// sends it: the pairs in order, and on a FIFO queue the message groups.
func sqsEvent(t *testing.T, pairs []string, groups []string) []byte {
	t.Helper()
	arn := "arn:aws:sqs:eu-west-1:123456789012:rates-refresh"
	if groups != nil {
		arn += ".fifo"
	}
	return sqsBatch(t, arn, pairs, groups)
}

// sqsBatch is an SQS batch of refreshes from the queue arn, with the
// records' message groups when groups is not nil: a FIFO queue's when
// arn ends in .fifo, a fair queue's tenants otherwise.
func sqsBatch(t *testing.T, arn string, pairs []string, groups []string) []byte {
	t.Helper()
	var ev events.SQSEvent
	for i, p := range pairs {
		body, _ := json.Marshal(fetchcache.Request{Pair: p})
		attrs := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1796153400000"}
		if groups != nil {
			attrs["MessageGroupId"] = groups[i]
			attrs["SequenceNumber"] = strconv.Itoa(18880452618734829568%1000000 + i)
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: fmt.Sprintf("msg-%d", i), ReceiptHandle: fmt.Sprintf("handle-%d", i), Body: string(body),
			Attributes: attrs, EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: "eu-west-1",
		})
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batchFailures decodes a partial batch response.
func batchFailures(t *testing.T, inv sandbox.Invocation) []string {
	t.Helper()
	var resp events.SQSEventResponse
	if inv.Err != nil || inv.FunctionError || json.Unmarshal(inv.Body, &resp) != nil || resp.BatchItemFailures == nil {
		t.Fatalf("batch answer %v, function error %t: %s; want a partial batch response", inv.Err, inv.FunctionError, inv.Body)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestEndToEndQueueFront(t *testing.T) {
	stack := newEmulatorStack(t)
	failing := sandbox.UpstreamConfig{ThrottleFirst: time.Minute, RetryAfter: time.Second, FailStatus: 503, ThrottleItems: []string{"GBP-USD"}}

	t.Run("10 records over 3 keys, one failing: exactly its records fail, one call per key", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: 1, Upstream: failing})
		pairs := []string{"EUR-USD", "GBP-USD", "USD-JPY", "EUR-USD", "GBP-USD", "USD-JPY", "EUR-USD", "GBP-USD", "EUR-USD", "USD-JPY"}
		inv := r.Pool.Sandboxes[0].Invoke(burstContext(t), sqsEvent(t, pairs, nil))
		if got, want := batchFailures(t, inv), []string{"msg-1", "msg-4", "msg-7"}; !slices.Equal(got, want) {
			t.Errorf("failed records %q, want GBP-USD's %q", got, want)
		}
		for _, k := range []string{"EUR-USD", "USD-JPY"} {
			if got := r.Upstream.RequestsFor(k); got != 1 {
				t.Errorf("upstream requests for %s = %d, want 1", k, got)
			}
		}
		if got := r.Upstream.RequestsFor("GBP-USD"); got < 1 || got > 2 {
			t.Errorf("upstream requests for the failing GBP-USD = %d, want 1 to 2 (lockcore's default FailureEpisode.MaxAttempts)", got)
		}
		t.Logf("batch of %d records over 3 keys: upstream calls %d, failed %q", len(pairs), r.Upstream.Requests(), batchFailures(t, inv))
	})

	t.Run("a FIFO batch keeps group order", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: 1, Upstream: failing})
		pairs := []string{"EUR-USD", "USD-JPY", "GBP-USD", "EUR-CHF", "AUD-USD", "EUR-JPY"}
		groups := []string{"eur", "usd", "eur", "usd", "eur", "usd"}
		inv := r.Pool.Sandboxes[0].Invoke(burstContext(t), sqsEvent(t, pairs, groups))
		// eur: EUR-USD done, GBP-USD fails, so AUD-USD after it fails untried.
		if got, want := batchFailures(t, inv), []string{"msg-2", "msg-4"}; !slices.Equal(got, want) {
			t.Errorf("failed records %q, want GBP-USD's and the eur record after it %q", got, want)
		}
		if got := r.Upstream.RequestsFor("AUD-USD"); got != 0 {
			t.Errorf("AUD-USD fetched %d times after GBP-USD failed before it in its group, want 0", got)
		}
		var eur, usd []string
		for _, a := range r.Upstream.Arrivals() {
			switch a.Item {
			case "EUR-USD", "GBP-USD", "AUD-USD":
				eur = append(eur, a.Item)
			default:
				usd = append(usd, a.Item)
			}
		}
		if !slices.Equal(eur, []string{"EUR-USD", "GBP-USD"}) || !slices.Equal(usd, []string{"USD-JPY", "EUR-CHF", "EUR-JPY"}) {
			t.Errorf("upstream calls: group eur %q, usd %q; want each group in its order", eur, usd)
		}
	})

	t.Run("a FIFO group hands a key's later record over only after the records before it", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: 1, Upstream: failing})
		pairs := []string{"EUR-USD", "GBP-USD", "EUR-USD", "USD-JPY"}
		groups := []string{"eur", "eur", "eur", "usd"}
		inv := r.Pool.Sandboxes[0].Invoke(burstContext(t), sqsEvent(t, pairs, groups))
		// eur: EUR-USD done, GBP-USD fails, so the second EUR-USD after it
		// is unprocessed and reported; usd is its own group.
		if got, want := batchFailures(t, inv), []string{"msg-1", "msg-2"}; !slices.Equal(got, want) {
			t.Errorf("failed records %q, want GBP-USD's and the EUR-USD after it %q", got, want)
		}
		var eur []string
		for _, a := range r.Upstream.Arrivals() {
			if a.Item != "USD-JPY" {
				eur = append(eur, a.Item)
			}
		}
		if !slices.Equal(eur, []string{"EUR-USD", "GBP-USD"}) || r.Upstream.RequestsFor("USD-JPY") != 1 {
			t.Errorf("upstream calls: group eur %q, USD-JPY %d; want EUR-USD then GBP-USD, and USD-JPY once", eur, r.Upstream.RequestsFor("USD-JPY"))
		}
	})

	t.Run("a fair queue's tenant orders nothing: its failing key fails only its own records", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: 1, Upstream: failing})
		pairs := []string{"EUR-USD", "GBP-USD", "USD-JPY"}
		inv := r.Pool.Sandboxes[0].Invoke(burstContext(t),
			sqsBatch(t, "arn:aws:sqs:eu-west-1:123456789012:rates-refresh", pairs, []string{"tenant-a", "tenant-a", "tenant-a"}))
		if got, want := batchFailures(t, inv), []string{"msg-1"}; !slices.Equal(got, want) {
			t.Errorf("failed records %q, want GBP-USD's only %q", got, want)
		}
		for _, k := range []string{"EUR-USD", "USD-JPY"} {
			if got := r.Upstream.RequestsFor(k); got != 1 {
				t.Errorf("upstream requests for %s = %d, want 1", k, got)
			}
		}
	})

	t.Run("the HTTP front reads what the queue front refreshed", func(t *testing.T) {
		r := stack.start(t, localrun.Options{N: 1})
		if got := batchFailures(t, r.Pool.Sandboxes[0].Invoke(burstContext(t), sqsEvent(t, []string{"EUR-USD"}, nil))); len(got) != 0 {
			t.Fatalf("refresh failed %q", got)
		}
		resps := httpAnswers(t, []sandbox.Invocation{r.Pool.Sandboxes[0].Invoke(burstContext(t), localrun.HTTPAPIEvents("EUR-USD", 1)[0])})
		var body fetchcache.Response
		if err := json.Unmarshal([]byte(resps[0].Body), &body); err != nil || resps[0].StatusCode != 200 || body.Source != fetchcache.SourceCache {
			t.Errorf("HTTP answer %d %s, want 200 from the cache", resps[0].StatusCode, resps[0].Body)
		}
		if got := r.Upstream.Requests(); got != 1 {
			t.Errorf("upstream requests = %d, want 1 (the refresh)", got)
		}
	})
}
