// Package oteltracer records lockmw's spans, and the DynamoDB calls of the
// AWS SDK, as OpenTelemetry spans. It imports the OpenTelemetry API only
// (go.opentelemetry.io/otel/trace, and go.opentelemetry.io/otel/attribute
// and go.opentelemetry.io/otel/codes), never the SDK: the program chooses
// the SDK, the exporter and the sampler, and passes its TracerProvider.
//
//	tracer, err := oteltracer.New(tp)
//	client := dynamodb.NewFromConfig(awsCfg, oteltracer.InstrumentDynamoDB(tp))
//	h := lockmw.Wrap(fetch, store, key, lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tracer}))
//
// The spans are "herdlock" (the middleware's part of the invocation), and
// under it "lock.acquire", "lock.wait" (back-dated to the start of the
// wait) and "lock.release", with the attributes of [lockmw.Tracer]:
// herdlock.lock.* for the lock, faas.invocation_id, cloud.resource_id and
// cloud.account.id for the invocation. A failed span has status Error with
// [lockmw.ErrorReason] as its description and its error.type attribute; the
// error's text is never recorded.
//
// # Joining Lambda's trace
//
// Lambda passes each invocation's AWS X-Ray trace header (Root=1-…;
// Parent=…;Sampled=…) to the runtime, which aws-lambda-go puts in the
// context (and, when one process runs one invocation at a time, in the
// environment variable _X_AMZN_TRACE_ID). When the context carries no
// span, the invocation's span becomes a child of that header's parent, in
// the same trace: X-Ray trace ids are 128-bit OpenTelemetry trace ids in
// another notation, so the spans join the trace Lambda records itself.
// [ContextWithLambdaParent] does the same for the handler's own spans, and
// [ParseTraceHeader] is the parser, for tests and other uses.
//
// # DynamoDB
//
// [InstrumentDynamoDB] sets the DynamoDB client's native tracer provider
// (dynamodb.Options.TracerProvider, smithy-go's tracing interfaces) to an
// adapter over an OpenTelemetry TracerProvider: each operation is a client
// span ("DynamoDB.GetItem") with rpc.*, aws.request_id and
// aws.dynamodb.table_names, and each attempt of it a child span
// ("Attempt"), so throttling retries are visible. The SDK's finer internal
// spans (serialisation, signing, endpoint resolution) are folded into
// these, and the SDK's raw error messages are dropped. [SDKTracerProvider]
// is the adapter alone, for other AWS SDK clients.
package oteltracer
