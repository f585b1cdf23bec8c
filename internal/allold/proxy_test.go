package allold_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/allold"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynalite/dynalitetest"
	"github.com/herdlock/herdlock/lockcore"
)

const table = "allold"

// setup starts dynalite with one table holding the item {lockKey: "held",
// n: 1}, and returns a client through a proxy in front of it, a client
// straight to dynalite, and the proxy. (The SDK checks X-Amz-Crc32 on
// successful answers only; post checks it on the error bodies the proxy
// rewrites.)
func setup(t *testing.T) (proxied, direct *dynamodb.Client, p *allold.Proxy) {
	t.Helper()
	srv := dynalitetest.Start(t)
	p, err := allold.New(srv.Endpoint(), nil)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	proxied = dynalite.NewClient(front.URL)
	direct = dynalite.NewClient(srv.Endpoint())
	if err := lockcore.CreateTable(t.Context(), direct, table); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	_, err = direct.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: held})
	if err != nil {
		t.Fatalf("PutItem() = %v", err)
	}
	return proxied, direct, p
}

var held = map[string]types.AttributeValue{
	"lockKey": &types.AttributeValueMemberS{Value: "held"},
	"n":       &types.AttributeValueMemberN{Value: "1"},
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"lockKey": &types.AttributeValueMemberS{Value: id}}
}

// conditionItem returns the item of err, which must be a failed condition.
func conditionItem(t *testing.T, call string, err error) map[string]types.AttributeValue {
	t.Helper()
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("%s = %v, want ConditionalCheckFailedException", call, err)
	}
	return ccf.Item
}

func TestConditionFailures(t *testing.T) {
	proxied, direct, p := setup(t)
	update := func(id string, rv types.ReturnValuesOnConditionCheckFailure) *dynamodb.UpdateItemInput {
		return &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: key(id),
			UpdateExpression:                    aws.String("SET n = :two"),
			ConditionExpression:                 aws.String("n = :two"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":two": &types.AttributeValueMemberN{Value: "2"}},
			ReturnValuesOnConditionCheckFailure: rv,
		}
	}
	put := &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: map[string]types.AttributeValue{"lockKey": held["lockKey"]},
		ConditionExpression:                 aws.String("attribute_not_exists(lockKey)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	del := &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: key("held"),
		ConditionExpression:                 aws.String("n = :two"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":two": &types.AttributeValueMemberN{Value: "2"}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	tests := []struct {
		name string
		call func(c *dynamodb.Client) error
		want map[string]types.AttributeValue // through the proxy
	}{
		{"UpdateItemAllOld", func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(t.Context(), update("held", types.ReturnValuesOnConditionCheckFailureAllOld))
			return err
		}, held},
		{"UpdateItemNone", func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(t.Context(), update("held", types.ReturnValuesOnConditionCheckFailureNone))
			return err
		}, nil},
		{"UpdateItemAbsent", func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(t.Context(), update("absent", types.ReturnValuesOnConditionCheckFailureAllOld))
			return err
		}, nil},
		{"PutItemAllOld", func(c *dynamodb.Client) error {
			_, err := c.PutItem(t.Context(), put)
			return err
		}, held},
		{"DeleteItemAllOld", func(c *dynamodb.Client) error {
			_, err := c.DeleteItem(t.Context(), del)
			return err
		}, held},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The control: dynalite itself sends no item. If this fails,
			// dynalite has learnt ALL_OLD and the proxy is no longer needed.
			if got := conditionItem(t, "direct", tt.call(direct)); got != nil {
				t.Errorf("direct: Item = %v, want none", got)
			}
			before := p.Filled()
			got := conditionItem(t, "proxied", tt.call(proxied))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("proxied: Item = %v, want %v", got, tt.want)
			}
			if n, want := p.Filled()-before, int64(len(tt.want))/int64(len(held)); n != want {
				t.Errorf("Filled() grew by %d, want %d", n, want)
			}
		})
	}
}

func TestSuccessPassesThrough(t *testing.T) {
	proxied, _, p := setup(t)
	out, err := proxied.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key("held"),
		UpdateExpression:                    aws.String("SET n = :two"),
		ConditionExpression:                 aws.String("n = :one"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":one": held["n"], ":two": &types.AttributeValueMemberN{Value: "2"}},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		t.Fatalf("UpdateItem() = %v", err)
	}
	if n := out.Attributes["n"]; !reflect.DeepEqual(n, &types.AttributeValueMemberN{Value: "2"}) {
		t.Errorf("UpdateItem() n = %v, want 2", n)
	}
	if p.Filled() != 0 {
		t.Errorf("Filled() = %d, want 0", p.Filled())
	}
}

// fakeUpstream answers every UpdateItem with a failed condition (with item
// when withItem), and GetItem with getStatus; it counts GetItem calls.
func fakeUpstream(t *testing.T, withItem bool, getStatus int, gets *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		var body string
		status := http.StatusBadRequest
		switch r.Header.Get("X-Amz-Target") {
		case "DynamoDB_20120810.UpdateItem":
			body = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`
			if withItem {
				body = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"lockKey":{"S":"upstream"}}}`
			}
		case "DynamoDB_20120810.GetItem":
			gets.Add(1)
			status = getStatus
			body = `{"Item":{"lockKey":{"S":"read"}}}`
			if getStatus != http.StatusOK {
				body = `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"secret detail"}`
			}
		}
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// post sends a raw UpdateItem asking for ALL_OLD through a proxy in front of
// upstream and returns the answer; it checks that X-Amz-Crc32 matches the
// body.
func post(t *testing.T, upstream string) (int, string) {
	t.Helper()
	p, err := allold.New(upstream, nil)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	req, err := http.NewRequest(http.MethodPost, front.URL, strings.NewReader(
		`{"TableName":"t","Key":{"lockKey":{"S":"k"}},"UpdateExpression":"SET a = :a","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.UpdateItem")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST = %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Header.Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10); got != want {
		t.Errorf("X-Amz-Crc32 = %s, want %s (checksum of the body)", got, want)
	}
	if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(b)) {
		t.Errorf("Content-Length = %s, want %d", got, len(b))
	}
	return resp.StatusCode, string(b)
}

func TestFillRewritesBodyAndChecksum(t *testing.T) {
	var gets atomic.Int64
	status, body := post(t, fakeUpstream(t, false, http.StatusOK, &gets))
	if status != http.StatusBadRequest || !strings.Contains(body, `"Item":{"lockKey":{"S":"read"}}`) || !strings.Contains(body, "ConditionalCheckFailedException") {
		t.Errorf("answer = %d %s, want 400 with the exception and the item read", status, body)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil || len(fields) != 3 {
		t.Errorf("answer fields = %v, %v, want __type, message and Item", fields, err)
	}
	if gets.Load() != 1 {
		t.Errorf("GetItem calls = %d, want 1", gets.Load())
	}
}

func TestUpstreamItemKept(t *testing.T) {
	var gets atomic.Int64
	status, body := post(t, fakeUpstream(t, true, http.StatusOK, &gets))
	if status != http.StatusBadRequest || !strings.Contains(body, `"Item":{"lockKey":{"S":"upstream"}}`) {
		t.Errorf("answer = %d %s, want 400 with the upstream's own item", status, body)
	}
	if gets.Load() != 0 {
		t.Errorf("GetItem calls = %d, want 0", gets.Load())
	}
}

func TestReadFailureIsServerError(t *testing.T) {
	var gets atomic.Int64
	status, body := post(t, fakeUpstream(t, false, http.StatusBadRequest, &gets))
	if status != http.StatusInternalServerError || !strings.Contains(body, "InternalServerError") || !strings.Contains(body, "GetItem") {
		t.Errorf("answer = %d %s, want 500 InternalServerError naming GetItem", status, body)
	}
	if strings.Contains(body, "secret detail") {
		t.Errorf("answer = %s, repeats the upstream's message", body)
	}
}

func TestNewRejectsBadUpstream(t *testing.T) {
	tests := []struct{ upstream string }{{""}, {"127.0.0.1:8000"}, {"ftp://h/"}, {"http://"}, {"http://[::1"}}
	for _, tt := range tests {
		if _, err := allold.New(tt.upstream, nil); err == nil {
			t.Errorf("New(%q) = nil error, want an error", tt.upstream)
		}
	}
}

// TestRequestForwardedUnchanged checks that the upstream receives the
// client's body, path, query and headers.
func TestRequestForwardedUnchanged(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Amzn-Requestid", "id-1")
		io.WriteString(w, "{}")
	}))
	t.Cleanup(up.Close)
	p, err := allold.New(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	req, _ := http.NewRequest(http.MethodPost, front.URL+"/x?y=1", bytes.NewReader([]byte(`{"a":1}`)))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 test")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got == nil || got.URL.Path != "/x" || got.URL.RawQuery != "y=1" || string(gotBody) != `{"a":1}` ||
		got.Header.Get("Authorization") != "AWS4-HMAC-SHA256 test" || got.Header.Get("X-Amz-Target") != "DynamoDB_20120810.GetItem" {
		t.Fatalf("upstream got %v %q, want the client's request", got, gotBody)
	}
	if resp.Header.Get("X-Amzn-Requestid") != "id-1" {
		t.Errorf("answer header X-Amzn-Requestid = %q, want id-1", resp.Header.Get("X-Amzn-Requestid"))
	}
}
