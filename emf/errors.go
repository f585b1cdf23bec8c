package emf

import "errors"

var (
	// ErrInvalid means a value emf cannot use, and the error's text says
	// which: a configuration New cannot use (no namespace from
	// [WithNamespace] nor POWERTOOLS_METRICS_NAMESPACE; a namespace that is
	// blank, longer than 255 characters, not printable ASCII or starts
	// with the reserved "AWS/"; a nil writer; an environment variable that
	// is not a boolean), or what CloudWatch would reject or a document
	// cannot hold: a metric name that is empty, blank, longer than 255
	// characters, not valid UTF-8, holds a control character or is "_aws";
	// a unit that is not a CloudWatch unit; a value that is NaN, infinite or
	// outside ±2^360; a metric added again before a flush with another unit
	// or resolution; a metric, dimension or property name used by a member
	// of another kind; a dimension name or value outside the CloudWatch
	// rules (names 1 to 255, values 1 to 1024 printable ASCII characters,
	// not all spaces, names not starting with a colon); more than 30
	// dimensions; a property key that is empty, not valid UTF-8 or "_aws",
	// or a value that cannot be marshalled to JSON; properties leaving too
	// little room for metrics in a 1 MiB document.
	ErrInvalid = errors.New("emf: invalid")

	// ErrWrite wraps the writer's error when a document could not be
	// written.
	ErrWrite = errors.New("emf: write")
)
