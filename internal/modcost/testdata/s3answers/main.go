// The quick-start consumer with its answers over the inline limit in S3
// through s3answers.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/s3answers"
)

type Event struct{ Pair string }

type Rate struct{ Value float64 }

func fetchRate(ctx context.Context, e Event) (Rate, error) { return Rate{Value: 1}, nil }

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), os.Getenv("LOCK_TABLE"))
	if err != nil {
		log.Fatal(err)
	}
	answers, err := s3answers.New(s3.NewFromConfig(cfg), os.Getenv("ANSWER_BUCKET"), "answers/")
	if err != nil {
		log.Fatal(err)
	}
	h, err := lockmw.New(fetchRate, store, func(ctx context.Context, e Event) (string, error) { return e.Pair, nil },
		lockmw.WithAnswers(lockmw.Answers{Store: answers}))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h)
}
