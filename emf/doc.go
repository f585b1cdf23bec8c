// Package emf writes CloudWatch embedded metric format (EMF) documents: JSON
// lines that Lambda sends to CloudWatch Logs and CloudWatch turns into
// metrics. It depends only on the standard library.
//
//	m, err := emf.New(emf.WithNamespace("Shop"), emf.WithService("orders"))
//	if err != nil {
//		return err
//	}
//	// In each invocation:
//	m.CaptureColdStart(lambdacontext.FunctionName)
//	m.AddDimension("tenant", tenant)
//	m.SetProperty("request_id", requestID)
//	m.Add("OrderPlaced", emf.Count, 1)
//	m.AddHighResolution("Latency", emf.Milliseconds, 12.5)
//	err = m.Flush() // one JSON line per document, to stdout
//
// A process that runs several invocations at once (Lambda Managed Instances,
// AWS_LAMBDA_MAX_CONCURRENCY above 1) gives each its own [Batch] of the one
// Metrics: each batch's metrics, dimensions and properties go to documents
// of their own, and documents flushed at the same time are written one
// Write call each, under the writer's lock, so lines never interleave.
//
//	b := m.NewBatch() // in each invocation
//	b.SetProperty("request_id", requestID)
//	b.Add("OrderPlaced", emf.Count, 1)
//	err = b.Flush()
//
// New reads the Powertools for AWS Lambda environment variables; the
// options win over them:
//
//   - POWERTOOLS_METRICS_NAMESPACE: the namespace ([WithNamespace]);
//   - POWERTOOLS_SERVICE_NAME: the service ([WithService]);
//   - POWERTOOLS_METRICS_DISABLED ("true", "1", ...): no output; metrics
//     are still checked and errors still returned, but Flush writes
//     nothing;
//   - POWERTOOLS_METRICS_FUNCTION_NAME: the cold start's function_name
//     dimension, over the name given to [Batch.CaptureColdStart];
//   - POWERTOOLS_DEV ("true", "1", ...): each document indented over
//     several lines, for reading local runs (CloudWatch Logs needs one
//     document per line: leave it off in Lambda).
//
// The service is a default dimension. Default dimensions survive a Flush; the metrics,
// dimensions and properties of an invocation do not.
//
// The format's limits are kept by splitting, never by dropping: a document
// holds at most 100 metrics, 100 values per metric and 1 MiB, and Flush
// writes as many documents as needed. A document has at most 30 dimensions.
// What can never be written validly (a unit CloudWatch does not know,
// NaN, an empty dimension value, an over-long name) is refused when it is
// added, with an error matching [ErrInvalid].
// [Metrics.AddMetric] fits one-method metrics interfaces such as lockcore's
// and keeps its errors for the next Flush.
package emf
