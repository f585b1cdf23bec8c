package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/sandbox"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// TestEndToEndIdempotentOrders sends POST /orders, the route that creates
// an order upstream once per Idempotency-Key, through the HTTP API front
// of the real bootstrap under the emulator, and judges what each client
// gets and how many orders the upstream created.
func TestEndToEndIdempotentOrders(t *testing.T) {
	stack := newEmulatorStack(t)
	// The upstream takes 400 ms per order, so that the burst's duplicates
	// arrive while the first one runs and wait for its answer.
	r := stack.start(t, localrun.Options{N: burstSize, Upstream: sandbox.UpstreamConfig{Latency: 400 * time.Millisecond}})
	// Warm every sandbox (a GET of the rates route), so that the burst's
	// invocations start together rather than one cold start apart.
	httpAnswers(t, r.Pool.Burst(burstContext(t), localrun.HTTPAPIEvents("EUR-USD", burstSize)))
	const order = `{"pair":"EUR-USD","amount":3}`

	t.Run("a burst of one key: one order, every client the same 201, the duplicates replayed", func(t *testing.T) {
		resps := httpAnswers(t, r.Pool.Burst(burstContext(t), localrun.OrderEvents("checkout-1", order, burstSize)))
		orders := r.Upstream.Orders()
		if len(orders) != 1 {
			t.Fatalf("upstream orders after a burst of %d with one key = %d, want 1", burstSize, len(orders))
		}
		replays := 0
		for i, resp := range resps {
			if resp.StatusCode != 201 || resp.Body != resps[0].Body {
				t.Errorf("client %d: %d %s, want 201 with the first client's body %s", i, resp.StatusCode, resp.Body, resps[0].Body)
			}
			if resp.Headers["Idempotent-Replayed"] == "true" {
				replays++
			}
		}
		if replays != burstSize-1 {
			t.Errorf("%d answers with %s: true, want %d (all but the one that created the order)", replays, "Idempotent-Replayed", burstSize-1)
		}
		var got struct {
			ID string `json:"orderId"`
		}
		if err := json.Unmarshal([]byte(resps[0].Body), &got); err != nil || got.ID != orders[0].ID {
			t.Errorf("answer %s names order %q, the upstream created %q", resps[0].Body, got.ID, orders[0].ID)
		}
		t.Logf("burst of %d POST /orders with one Idempotency-Key: %d upstream order, %d replays", burstSize, len(orders), replays)
	})

	t.Run("a retry after the burst is replayed, a new key creates a new order", func(t *testing.T) {
		before := len(r.Upstream.Orders())
		retry := httpAnswers(t, []sandbox.Invocation{r.Pool.Sandboxes[0].Invoke(burstContext(t), localrun.OrderEvents("checkout-1", order, 1)[0])})[0]
		if retry.StatusCode != 201 || retry.Headers["Idempotent-Replayed"] != "true" {
			t.Errorf("retry: %d %v, want a replayed 201", retry.StatusCode, retry.Headers)
		}
		fresh := httpAnswers(t, []sandbox.Invocation{r.Pool.Sandboxes[1].Invoke(burstContext(t), localrun.OrderEvents("checkout-2", order, 1)[0])})[0]
		if fresh.StatusCode != 201 || fresh.Headers["Idempotent-Replayed"] != "" || fresh.Body == retry.Body {
			t.Errorf("new key: %d %v %s, want a new order, not replayed", fresh.StatusCode, fresh.Headers, fresh.Body)
		}
		if got := len(r.Upstream.Orders()); got != before+1 {
			t.Errorf("upstream orders %d after a retry and a new key, want %d", got, before+1)
		}
	})

	tests := []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"the same key with another body is 422", "checkout-1", `{"pair":"EUR-USD","amount":4}`, 422, "idempotency_key_reused"},
		{"a POST without the key is 400", "", order, 400, "bad_idempotency_key"},
		{"a body that is no order is 400, not sent upstream", "checkout-bad", `{"pair":"EUR-USD","amount":-1}`, 400, "bad_order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(r.Upstream.Orders())
			resp := httpAnswers(t, []sandbox.Invocation{r.Pool.Sandboxes[0].Invoke(burstContext(t), localrun.OrderEvents(tt.key, tt.body, 1)[0])})[0]
			var p httpmw.Problem
			if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || resp.StatusCode != tt.status || p.Reason != tt.code {
				t.Errorf("answer %d %s, want %d with code %s", resp.StatusCode, resp.Body, tt.status, tt.code)
			}
			if got := len(r.Upstream.Orders()); got != before {
				t.Errorf("upstream orders %d, want %d: the request created one", got, before)
			}
		})
	}
}

// TestEndToEndIdempotentOrderUpstreamRefusal: an upstream that refuses
// the order (429 with Retry-After) is the client's 503 with a Retry-After,
// and that failure is not kept: the client's retry with the same key,
// after the wait, creates the order instead of replaying the 503.
func TestEndToEndIdempotentOrderUpstreamRefusal(t *testing.T) {
	stack := newEmulatorStack(t)
	r := stack.start(t, localrun.Options{N: 1, Upstream: sandbox.UpstreamConfig{ThrottleFirst: time.Second,
		RetryAfter: time.Second, ThrottleItems: []string{sandbox.OrdersItem}}})
	ev := localrun.OrderEvents("checkout-throttled", `{"pair":"EUR-USD","amount":3}`, 1)[0]
	first := r.Pool.Sandboxes[0].Invoke(burstContext(t), ev)
	refused := httpAnswers(t, []sandbox.Invocation{first})[0]
	var p httpmw.Problem
	if err := json.Unmarshal([]byte(refused.Body), &p); err != nil || refused.StatusCode != 503 || p.Reason != "upstream_throttled" ||
		refused.Headers["Retry-After"] != "1" {
		t.Fatalf("throttled order: %d %v %s, want 503 upstream_throttled with Retry-After: 1", refused.StatusCode, refused.Headers, refused.Body)
	}
	if got := len(r.Upstream.Orders()); got != 0 {
		t.Fatalf("upstream orders after a refusal = %d, want 0", got)
	}
	// Wait what the answer asked for: a known instant on the wall clock.
	time.Sleep(time.Until(first.End.Add(time.Second + 50*time.Millisecond)))
	retry := httpAnswers(t, []sandbox.Invocation{r.Pool.Sandboxes[0].Invoke(burstContext(t), ev)})[0]
	if retry.StatusCode != 201 || retry.Headers["Idempotent-Replayed"] != "" {
		t.Errorf("retry after the wait: %d %v %s, want a new 201, not a replay of the 503", retry.StatusCode, retry.Headers, retry.Body)
	}
	if got := len(r.Upstream.Orders()); got != 1 {
		t.Errorf("upstream orders after the retry = %d, want 1", got)
	}
}

// TestEndToEndIdempotentQueue redelivers an SQS batch of refreshes (the
// same message ids) after the cache it filled expired: each record is
// processed once per message id, so the redelivery calls the upstream for
// none of them, while a new message in it still refreshes its pair.
func TestEndToEndIdempotentQueue(t *testing.T) {
	stack := newEmulatorStack(t)
	const ttl = 2 * time.Second
	r := stack.start(t, localrun.Options{N: 1, CacheTTL: ttl})
	pairs := []string{"EUR-USD", "USD-JPY", "EUR-USD"}
	batch := sqsEvent(t, pairs, nil)
	first := r.Pool.Sandboxes[0].Invoke(burstContext(t), batch)
	if got := batchFailures(t, first); len(got) != 0 {
		t.Fatalf("first delivery: failed records %q", got)
	}
	if got := r.Upstream.Requests(); got != 2 {
		t.Fatalf("upstream requests after the first delivery = %d, want 2 (one per pair)", got)
	}
	// Wait out the freshness of the cache and of the pair's lock, both
	// counted from before the first invocation ended: a known instant on
	// the wall clock, not a synchronisation.
	time.Sleep(time.Until(first.End.Add(ttl + 100*time.Millisecond)))

	// The redelivery carries the batch's records again and a new message
	// for EUR-USD: only the new one runs, and, the cache being expired, it
	// refreshes EUR-USD; USD-JPY, only redelivered, is not fetched again.
	var ev events.SQSEvent
	if err := json.Unmarshal(batch, &ev); err != nil {
		t.Fatal(err)
	}
	extra := ev.Records[0]
	extra.MessageId, extra.ReceiptHandle = "msg-new", "handle-new"
	ev.Records = append(ev.Records, extra)
	for i := range ev.Records {
		ev.Records[i].Attributes["ApproximateReceiveCount"] = "2"
	}
	ev.Records[len(ev.Records)-1].Attributes = map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1796153400000"}
	raw, _ := json.Marshal(ev)
	if got := batchFailures(t, r.Pool.Sandboxes[0].Invoke(burstContext(t), raw)); len(got) != 0 {
		t.Fatalf("redelivery: failed records %q", got)
	}
	if got := r.Upstream.RequestsFor("USD-JPY"); got != 1 {
		t.Errorf("upstream requests for USD-JPY after its redelivery = %d, want 1: a redelivered record was processed again", got)
	}
	if got := r.Upstream.RequestsFor("EUR-USD"); got != 2 {
		t.Errorf("upstream requests for EUR-USD after a new message past expiry = %d, want 2: the new message refreshes", got)
	}
	t.Logf("redelivery of %d records and 1 new past the cache's expiry: upstream requests %d (USD-JPY %d, EUR-USD %d)",
		len(pairs), r.Upstream.Requests(), r.Upstream.RequestsFor("USD-JPY"), r.Upstream.RequestsFor("EUR-USD"))
}
