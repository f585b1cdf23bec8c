//go:build !xray || !otel

package main

import (
	"fmt"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
)

// errNotBuiltIn says that the tracing mode's SDK was left out of this build.
func errNotBuiltIn(mode string) error {
	return fmt.Errorf("%s=%s needs a bootstrap built with -tags %s (make build-FetchFunction LAMBDA_TAGS=%s)", fetchcache.EnvTracing, mode, mode, mode)
}
