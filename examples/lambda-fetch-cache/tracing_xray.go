//go:build xray

package main

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

// setupXRay routes the X-Ray SDK's log and instruments the clients of
// awsCfg; built with the xray tag.
func setupXRay(logger *slog.Logger, awsCfg *aws.Config) (tracing, error) {
	tr, err := xraytracer.Setup(logger)
	if err != nil {
		return tracing{}, err
	}
	xraytracer.InstrumentDynamoDB(awsCfg)
	return tracing{tracer: tr, wrap: untraced}, nil
}
