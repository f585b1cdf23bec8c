// Package xraytracer records lockmw's spans as AWS X-Ray subsegments with
// the X-Ray SDK for Go (github.com/aws/aws-xray-sdk-go), under the segment
// that Lambda starts for each traced invocation:
//
//	tracer, err := xraytracer.Setup(logger)
//	...
//	xraytracer.InstrumentDynamoDB(&awsCfg) // the DynamoDB calls as subsegments too
//	h := lockmw.Wrap(fetch, store, key, lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tracer}))
//
// The subsegments are "herdlock" (the middleware's part of the invocation),
// and under it "lock.acquire", "lock.wait" (back-dated to the start of the
// wait) and "lock.release". They carry the annotations lock_group, lock_id,
// outcome, fence, takeover, after_failure, polls, result and coalesced, which X-Ray
// indexes for filter expressions; attributes without an annotation name
// (the invocation id, the function ARN) go to the metadata namespace
// "herdlock". A failed span is closed with a fault whose exception holds
// only [lockmw.ErrorReason], never the error's text.
//
// The X-Ray SDKs are in maintenance mode since 2026-02-25 and their support
// ends on 2027-02-25; package oteltracer is the replacement, and
// [lockmw.MultiTracer] runs both during a migration.
//
// # Process-wide state
//
// The X-Ray SDK keeps its logger and its context-missing strategy in
// process-wide variables, and by default logs to stdout, where Lambda reads
// the embedded-metric-format lines, and may panic on a missing segment.
// [Setup] is the one call that changes them; nothing in this package does
// so at import. [New] returns a tracer without touching them, for a
// program that configures the SDK itself.
package xraytracer
