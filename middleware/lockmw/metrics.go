package lockmw

import (
	"errors"
	"io"
	"os"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/emf"
)

// Metric property names: per-invocation values written as EMF properties,
// never as dimensions, because every distinct dimension value is a separate
// (billed) CloudWatch metric.
const (
	propLockID    = "lockId"
	propLockGroup = "lockGroup"
	propRequestID = "requestId"
	propOutcome   = "lockOutcome"
	propFence     = "fence"
)

// flushInto sets the invocation's properties on its batch b, and its
// cold start when coldStart is set, and flushes b once: its own documents,
// whatever other invocations of the process flush at the same time.
func flushInto(b *emf.Batch, coldStart bool, props [5]prop) error {
	var errs []error
	if coldStart {
		errs = append(errs, b.CaptureColdStart(lambdacontext.FunctionName))
	}
	for _, p := range props {
		if p.v == nil {
			continue
		}
		_ = b.SetProperty(p.k, p.v) // keys are constants; values are strings and numbers
	}
	return errors.Join(append(errs, b.Flush())...)
}

type prop struct {
	k string
	v any
}

// newDefaultMetrics returns the default of [Telemetry].EMF: an
// emf.Metrics on w, with namespace and service from the Powertools variables
// or else defaultNamespace and the function name.
func newDefaultMetrics(w io.Writer) (*emf.Metrics, error) {
	opts := []emf.Option{emf.WithWriter(w)}
	if os.Getenv(emf.EnvNamespace) == "" {
		opts = append(opts, emf.WithNamespace(defaultNamespace))
	}
	if os.Getenv(emf.EnvService) == "" {
		svc := os.Getenv(envFunctionName)
		if svc == "" {
			svc = defaultNamespace
		}
		opts = append(opts, emf.WithService(svc))
	}
	return emf.New(opts...)
}
