package emf

import "math"

// Limits of the embedded metric format and of CloudWatch. Every document
// Flush writes stays within them; what cannot is refused when it is added.
const (
	maxMetricsPerDocument = 100 // MetricDefinition objects per directive
	maxValuesPerMetric    = 100 // values in one metric's array
	maxDimensions         = 30  // dimension keys per DimensionSet
	maxNameLen            = 255 // metric names, dimension names, namespace
	maxDimensionValueLen  = 1024

	// maxDocumentBytes bounds one document, its newline included: a
	// CloudWatch Logs event is at most 1 MiB, 26 bytes of which are the
	// event's own overhead.
	maxDocumentBytes = 1<<20 - 26

	// maxPropertyBytes bounds the encoded properties so that a document
	// with the largest namespace, 30 of the largest dimensions and one
	// metric still fits: those take less than 90 KiB.
	maxPropertyBytes = maxDocumentBytes - 128<<10

	maxErrors = 16 // errors kept for Flush; the rest are counted
)

// maxValue is the largest magnitude CloudWatch accepts, 2^360.
var maxValue = math.Ldexp(1, 360)
