package main

import (
	"strconv"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"gopkg.in/yaml.v3"
)

// TestTemplateFronts checks the front doors of the function: the HTTP API
// routes GET /rates/{pair} and POST /orders (payload 2.0, which
// httpmw.NewHTTPAPI and idempotency.WrapHTTP read),
// and the refresh queue with partial batch responses and a dead-letter
// queue, polled with a visibility timeout that outlasts the function.
func TestTemplateFronts(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	fn, err := tmpl.GetServerlessFunctionWithName("FetchFunction")
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct{ event, path, method string }{
		{"RatesRoute", "/rates/{pair}", "GET"},
		{"OrdersRoute", "/orders", "POST"},
	}
	for _, tt := range routes {
		route := rawNode(t, "Resources", "FetchFunction", "Properties", "Events", tt.event)
		if v := scalar(t, route, "Type"); v != "HttpApi" {
			t.Errorf("%s Type %q, want HttpApi", tt.event, v)
		}
		for key, want := range map[string]string{"Path": tt.path, "Method": tt.method, "PayloadFormatVersion": "2.0"} {
			if v := scalar(t, route, "Properties", key); v != want {
				t.Errorf("%s %s = %q, want %q", tt.event, key, v, want)
			}
		}
		if n := mapping(t, route, "Properties", "ApiId"); n.Tag != "!Ref" || n.Value != "RatesHttpApi" {
			t.Errorf("%s ApiId %s %s, want !Ref RatesHttpApi", tt.event, n.Tag, n.Value)
		}
		if got := fetchcache.OrdersRouteKey; tt.event == "OrdersRoute" && got != tt.method+" "+tt.path {
			t.Errorf("the function routes %q to the orders handler, the template's route is %s %s", got, tt.method, tt.path)
		}
	}

	queue := rawNode(t, "Resources", "FetchFunction", "Properties", "Events", "RefreshQueue")
	if v := scalar(t, queue, "Type"); v != "SQS" {
		t.Errorf("RefreshQueue event Type %q, want SQS", v)
	}
	if n := mapping(t, queue, "Properties", "Queue"); n.Tag != "!GetAtt" || n.Value != "RefreshQueue.Arn" {
		t.Errorf("RefreshQueue event Queue %s %s, want !GetAtt RefreshQueue.Arn", n.Tag, n.Value)
	}
	types := mapping(t, queue, "Properties", "FunctionResponseTypes")
	if len(types.Content) != 1 || types.Content[0].Value != "ReportBatchItemFailures" {
		t.Errorf("FunctionResponseTypes %v, want [ReportBatchItemFailures]", types.Content)
	}
	if b, err := strconv.Atoi(scalar(t, queue, "Properties", "BatchSize")); err != nil || b < 1 || b > 10 {
		t.Errorf("BatchSize %v, want 1 to 10", b)
	}

	q, err := tmpl.GetSQSQueueWithName("RefreshQueue")
	if err != nil {
		t.Fatal(err)
	}
	if q.VisibilityTimeout == nil || fn.Timeout == nil || *q.VisibilityTimeout < 6**fn.Timeout {
		t.Errorf("VisibilityTimeout %v, want at least six times the function timeout %v", q.VisibilityTimeout, fn.Timeout)
	}
	redrive := lookupAny(q.RedrivePolicy)
	if redrive["deadLetterTargetArn"] != "GetAtt:RefreshDeadLetterQueue.Arn" {
		t.Errorf("RedrivePolicy %v, want the dead-letter queue", q.RedrivePolicy)
	}
	if n, ok := redrive["maxReceiveCount"].(float64); !ok || n < 2 {
		t.Errorf("maxReceiveCount %v, want at least 2", redrive["maxReceiveCount"])
	}
	dlq, err := tmpl.GetSQSQueueWithName("RefreshDeadLetterQueue")
	if err != nil {
		t.Fatal(err)
	}
	if dlq.MessageRetentionPeriod == nil || *dlq.MessageRetentionPeriod < 7*24*3600 {
		t.Errorf("dead-letter MessageRetentionPeriod %v, want at least a week to look at it", dlq.MessageRetentionPeriod)
	}
	checkFIFOFront(t, tmpl, fn)
	for _, name := range []string{"RefreshQueue", "RefreshDeadLetterQueue", "RefreshFifoQueue", "RefreshFifoDeadLetterQueue"} {
		q, _ := tmpl.GetSQSQueueWithName(name)
		if q.SqsManagedSseEnabled == nil || !*q.SqsManagedSseEnabled {
			t.Errorf("%s: want SqsManagedSseEnabled", name)
		}
	}
	if _, err := tmpl.GetServerlessHttpApiWithName("RatesHttpApi"); err != nil {
		t.Error(err)
	}
}

// checkFIFOFront checks the FIFO refresh queue, which puts the deployed
// function on sqsmw's FIFO path: a FIFO queue (its ARN ends in .fifo) with
// a FIFO dead-letter queue, polled with partial batch responses and no
// batching window, which FIFO queues do not take.
func checkFIFOFront(t *testing.T, tmpl *cloudformation.Template, fn *serverless.Function) {
	t.Helper()
	ev := rawNode(t, "Resources", "FetchFunction", "Properties", "Events", "RefreshFifoQueue")
	if v := scalar(t, ev, "Type"); v != "SQS" {
		t.Errorf("RefreshFifoQueue event Type %q, want SQS", v)
	}
	if n := mapping(t, ev, "Properties", "Queue"); n.Tag != "!GetAtt" || n.Value != "RefreshFifoQueue.Arn" {
		t.Errorf("RefreshFifoQueue event Queue %s %s, want !GetAtt RefreshFifoQueue.Arn", n.Tag, n.Value)
	}
	types := mapping(t, ev, "Properties", "FunctionResponseTypes")
	if len(types.Content) != 1 || types.Content[0].Value != "ReportBatchItemFailures" {
		t.Errorf("FIFO FunctionResponseTypes %v, want [ReportBatchItemFailures]", types.Content)
	}
	for _, kv := range mapping(t, ev, "Properties").Content {
		if kv.Value == "MaximumBatchingWindowInSeconds" {
			t.Error("RefreshFifoQueue event sets MaximumBatchingWindowInSeconds, which FIFO queues do not take")
		}
	}
	q, err := tmpl.GetSQSQueueWithName("RefreshFifoQueue")
	if err != nil {
		t.Fatal(err)
	}
	if q.FifoQueue == nil || !*q.FifoQueue || q.QueueName != nil {
		t.Errorf("RefreshFifoQueue FifoQueue %v, QueueName %v: want a FIFO queue with a generated name (ending in .fifo)", q.FifoQueue, q.QueueName)
	}
	if q.VisibilityTimeout == nil || fn.Timeout == nil || *q.VisibilityTimeout < 6**fn.Timeout {
		t.Errorf("FIFO VisibilityTimeout %v, want at least six times the function timeout %v", q.VisibilityTimeout, fn.Timeout)
	}
	if redrive := lookupAny(q.RedrivePolicy); redrive["deadLetterTargetArn"] != "GetAtt:RefreshFifoDeadLetterQueue.Arn" {
		t.Errorf("FIFO RedrivePolicy %v, want the FIFO dead-letter queue", q.RedrivePolicy)
	}
	dlq, err := tmpl.GetSQSQueueWithName("RefreshFifoDeadLetterQueue")
	if err != nil {
		t.Fatal(err)
	}
	if dlq.FifoQueue == nil || !*dlq.FifoQueue {
		t.Error("RefreshFifoDeadLetterQueue: want a FIFO queue, as a FIFO queue's dead-letter queue must be")
	}
}

func scalar(t *testing.T, n *yaml.Node, keys ...string) string {
	t.Helper()
	return mapping(t, n, keys...).Value
}

func lookupAny(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
