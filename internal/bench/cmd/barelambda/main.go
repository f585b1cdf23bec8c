// Command barelambda is the reference for the cold-start figure: a bare
// aws-lambda-go handler that takes the example's event and does nothing
// else, built exactly as the example's bootstrap is (GOOS=linux,
// CGO_ENABLED=0, -tags lambda.norpc, -trimpath).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

// request is the example's event shape.
type request struct {
	Pair string `json:"pair"`
}

func main() {
	lambda.Start(func(_ context.Context, r request) (string, error) { return r.Pair, nil })
}
