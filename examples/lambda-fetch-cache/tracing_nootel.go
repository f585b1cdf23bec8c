//go:build !otel

package main

import (
	"context"
	"log/slog"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
)

// setupOTel refuses the otel mode in a bootstrap built without the otel tag.
func setupOTel(context.Context, fetchcache.Config, *slog.Logger) (tracing, error) {
	return tracing{}, errNotBuiltIn(fetchcache.TracingOTel)
}
