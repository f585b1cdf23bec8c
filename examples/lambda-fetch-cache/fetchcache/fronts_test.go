package fetchcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
)

func TestClassify(t *testing.T) {
	samples := map[string]string{
		"httpapi-get-rate.json": fetchcache.SourceHTTPAPI,
		"funcurl-get-rate.json": fetchcache.SourceFunctionURL,
		"rest-get-rate.json":    fetchcache.SourceDirect, // no REST API in the stack
		"alb-get-rate.json":     fetchcache.SourceDirect,
	}
	for name, want := range samples {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "middleware", "httpmw", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fetchcache.Classify(raw); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "middleware", "sqsmw", "testdata", "sqs-fifo-batch.json"))
	if err != nil {
		t.Fatal(err)
	}
	for ev, want := range map[string]string{
		string(raw):          fetchcache.SourceSQS,
		`{"pair":"EUR-USD"}`: fetchcache.SourceDirect,
		`{"Records":[]}`:     fetchcache.SourceDirect,
		`{"Records":[{"eventSource":"aws:sns"}]}`: fetchcache.SourceDirect,
		`not json`: fetchcache.SourceDirect,
	} {
		if got := fetchcache.Classify(json.RawMessage(ev)); got != want {
			t.Errorf("%.40s: %s, want %s", ev, got, want)
		}
	}
}

func TestQueueFrontNeedsTheCache(t *testing.T) {
	f := fetchcache.Fronts{}
	_, err := f.Handle(context.Background(), json.RawMessage(`{"Records":[{"eventSource":"aws:sqs","body":"{}"}]}`))
	if !errors.Is(err, fetchcache.ErrNoQueueFront) {
		t.Errorf("SQS batch without a queue front: %v, want ErrNoQueueFront", err)
	}
}
