package emf_test

import (
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/herdlock/herdlock/emf"
)

// stdout is os.Stdout with each document's timestamp written as
// 1700000000000, so that the examples' output is stable.
var stdout io.Writer = stampWriter{}

type stampWriter struct{}

var timestamp = regexp.MustCompile(`"Timestamp":[0-9]+`)

func (s stampWriter) Write(p []byte) (int, error) {
	_, err := os.Stdout.Write(timestamp.ReplaceAll(p, []byte(`"Timestamp":1700000000000`)))
	return len(p), err
}

func Example() {
	m, err := emf.New(
		emf.WithNamespace("Shop"),
		emf.WithService("orders"),
		emf.WithWriter(stdout),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	m.AddDimension("tenant", "acme")
	m.SetProperty("request_id", "c0ffee")
	m.Add("OrderPlaced", emf.Count, 1)
	m.Add("Latency", emf.Milliseconds, 12.5)
	m.Add("Latency", emf.Milliseconds, 7)
	m.AddHighResolution("QueueDepth", emf.None, 3)
	if err := m.Flush(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["service","tenant"]],"Metrics":[{"Name":"OrderPlaced","Unit":"Count"},{"Name":"Latency","Unit":"Milliseconds"},{"Name":"QueueDepth","Unit":"None","StorageResolution":1}]}]},"service":"orders","tenant":"acme","request_id":"c0ffee","OrderPlaced":1,"Latency":[12.5,7],"QueueDepth":3}
}

// AddMetric takes the unit by name, as lockcore's Metrics interface does,
// and keeps any error for the next Flush.
func ExampleMetrics_AddMetric() {
	m, _ := emf.New(emf.WithNamespace("Locks"), emf.WithService("checkout"), emf.WithWriter(stdout))
	m.AddMetric("LockAcquisitionDuration", "Milliseconds", 42)
	m.AddMetric("LockPollCount", "Furlongs", 3)
	fmt.Println(m.Flush())
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Locks","Dimensions":[["service"]],"Metrics":[{"Name":"LockAcquisitionDuration","Unit":"Milliseconds"}]}]},"service":"checkout","LockAcquisitionDuration":42}
	// metric "LockPollCount": emf: invalid unit: "Furlongs" is not a CloudWatch unit
}

// Default dimensions stay from one Flush to the next; the dimensions of an
// invocation do not.
func ExampleWithDefaultDimensions() {
	m, _ := emf.New(
		emf.WithNamespace("Shop"),
		emf.WithService("orders"),
		emf.WithDefaultDimensions(map[string]string{"env": "prod"}),
		emf.WithWriter(stdout),
	)
	m.AddDimension("tenant", "acme")
	m.Add("Orders", emf.Count, 1)
	m.Flush()
	m.Add("Orders", emf.Count, 2)
	m.Flush()
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["service","env","tenant"]],"Metrics":[{"Name":"Orders","Unit":"Count"}]}]},"service":"orders","env":"prod","tenant":"acme","Orders":1}
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["service","env"]],"Metrics":[{"Name":"Orders","Unit":"Count"}]}]},"service":"orders","env":"prod","Orders":2}
}

// Any CloudWatch unit is a Unit, constant or not; one CloudWatch does not
// know is refused when it is added.
func ExampleUnit() {
	m, _ := emf.New(emf.WithNamespace("Net"), emf.WithWriter(stdout))
	fmt.Println(m.Add("Throughput", emf.Unit("Gigabits/Second"), 2.5))
	fmt.Println(m.Add("Throughput", emf.Unit("gigabits"), 2.5))
	m.Flush()
	// Output:
	// <nil>
	// metric "Throughput": emf: invalid unit: "gigabits" is not a CloudWatch unit
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Net","Dimensions":[[]],"Metrics":[{"Name":"Throughput","Unit":"Gigabits/Second"}]}]},"Throughput":2.5}
}

// With several invocations at once in one process, each gets its own batch
// of the one Metrics: its metrics, dimensions and properties go to its own
// document.
func ExampleMetrics_NewBatch() {
	m, _ := emf.New(emf.WithNamespace("Shop"), emf.WithService("orders"), emf.WithWriter(stdout))
	first, second := m.NewBatch(), m.NewBatch()
	first.SetProperty("requestId", "r-1")
	second.SetProperty("requestId", "r-2")
	first.Add("OrderPlaced", emf.Count, 1)
	second.Add("OrderFailed", emf.Count, 1)
	second.Flush()
	first.Flush()
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["service"]],"Metrics":[{"Name":"OrderFailed","Unit":"Count"}]}]},"service":"orders","requestId":"r-2","OrderFailed":1}
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["service"]],"Metrics":[{"Name":"OrderPlaced","Unit":"Count"}]}]},"service":"orders","requestId":"r-1","OrderPlaced":1}
}
