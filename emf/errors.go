package emf

import "errors"

var (
	// ErrNoNamespace means neither [WithNamespace] nor
	// POWERTOOLS_METRICS_NAMESPACE gave a namespace.
	ErrNoNamespace = errors.New("emf: no namespace")

	// ErrInvalidNamespace means the namespace is empty, blank, longer than
	// 255 characters, not printable ASCII, or starts with the reserved
	// "AWS/".
	ErrInvalidNamespace = errors.New("emf: invalid namespace")

	// ErrInvalidOption means an option or an environment variable holds a
	// value New cannot use, such as a nil writer or clock.
	ErrInvalidOption = errors.New("emf: invalid option")

	// ErrInvalidName means a metric name is empty, blank, longer than 255
	// characters, not valid UTF-8, holds a control character, or is "_aws".
	ErrInvalidName = errors.New("emf: invalid metric name")

	// ErrUnknownUnit means a unit is not one of the [Unit] constants.
	ErrUnknownUnit = errors.New("emf: unknown unit")

	// ErrInvalidValue means a metric value is NaN, infinite, or outside the
	// ±2^360 range CloudWatch accepts.
	ErrInvalidValue = errors.New("emf: invalid metric value")

	// ErrMetricRedefined means a metric was added again, before a flush,
	// with another unit or storage resolution.
	ErrMetricRedefined = errors.New("emf: metric redefined with another unit or resolution")

	// ErrNameInUse means a metric, dimension or property name is already
	// used by a member of another kind: all three share the document root.
	ErrNameInUse = errors.New("emf: name already in use")

	// ErrInvalidDimension means a dimension name or value breaks the
	// CloudWatch rules: names have 1 to 255 and values 1 to 1024 printable
	// ASCII characters, at least one of them not a space, and names do not
	// start with a colon.
	ErrInvalidDimension = errors.New("emf: invalid dimension")

	// ErrTooManyDimensions means a document would need more than 30
	// dimensions, the service and default dimensions included.
	ErrTooManyDimensions = errors.New("emf: too many dimensions")

	// ErrInvalidProperty means a property key is empty, not valid UTF-8 or
	// "_aws", or its value cannot be marshalled to JSON.
	ErrInvalidProperty = errors.New("emf: invalid property")

	// ErrPropertiesTooLarge means the properties together would leave too
	// little room for metrics in a 1 MiB document.
	ErrPropertiesTooLarge = errors.New("emf: properties too large")

	// ErrNoMetrics is returned by Flush when there is nothing to write and
	// [WithErrorOnEmpty] asked for it.
	ErrNoMetrics = errors.New("emf: no metrics to flush")

	// ErrWrite wraps the writer's error when a document could not be
	// written.
	ErrWrite = errors.New("emf: write")
)
