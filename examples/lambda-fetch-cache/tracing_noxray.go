//go:build !xray

package main

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
)

// setupXRay refuses the xray mode in a bootstrap built without the xray tag.
func setupXRay(*slog.Logger, *aws.Config) (tracing, error) {
	return tracing{}, errNotBuiltIn(fetchcache.TracingXRay)
}
