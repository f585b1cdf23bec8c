package capacity

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"net/http"
	"strconv"
)

// Throttling reasons of a hot item, as DynamoDB names them.
const (
	ReasonWriteKeyRange = "TableWriteKeyRangeThroughputExceeded"
	ReasonReadKeyRange  = "TableReadKeyRangeThroughputExceeded"
)

const jsonContentType = "application/x-amz-json-1.0"

type throttlingReason struct {
	Reason   string `json:"reason"`
	Resource string `json:"resource"`
}

// throttleBody returns the JSON body of a throttled answer. The two
// exceptions spell their list of reasons differently on the wire:
// ProvisionedThroughputExceededException has "ThrottlingReasons",
// ThrottlingException "throttlingReasons".
func throttleBody(exc Exception, reason, tableARN string) []byte {
	reasons := []throttlingReason{{Reason: reason, Resource: tableARN}}
	var v any
	switch exc {
	case Throttling:
		v = struct {
			Type    string             `json:"__type"`
			Message string             `json:"message"`
			Reasons []throttlingReason `json:"throttlingReasons"`
		}{"com.amazonaws.dynamodb.v20120810#ThrottlingException", throttleMessage(reason), reasons}
	default:
		v = struct {
			Type    string             `json:"__type"`
			Message string             `json:"message"`
			Reasons []throttlingReason `json:"ThrottlingReasons"`
		}{"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", throttleMessage(reason), reasons}
	}
	b, _ := json.Marshal(v) // plain strings: cannot fail
	return b
}

func throttleMessage(reason string) string {
	if reason == ReasonReadKeyRange {
		return "Throughput exceeds the current read capacity of one partition of your table."
	}
	return "Throughput exceeds the current write capacity of one partition of your table."
}

// writeJSON answers with status and body, a request id and a correct
// x-amz-crc32.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", jsonContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("x-amzn-RequestId", requestID())
	h.Set("x-amz-crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tableARN returns the ARN of table.
func (c Config) tableARN(table string) string {
	return "arn:aws:dynamodb:" + c.Region + ":" + c.Account + ":table/" + table
}
