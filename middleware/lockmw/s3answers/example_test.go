package s3answers_test

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/s3answers"
)

func ExampleNew() {
	cfg := aws.Config{Region: "eu-west-1"} // config.LoadDefaultConfig in a Lambda
	answers, err := s3answers.New(s3.NewFromConfig(cfg), os.Getenv("ANSWER_BUCKET"), "fetch-cache/")
	if err != nil {
		log.Fatal(err) // an empty ANSWER_BUCKET fails here, not at the first large answer
	}
	fetch := func(ctx context.Context, pair string) ([]byte, error) { return make([]byte, 1<<20), nil }
	key := func(ctx context.Context, pair string) (string, error) { return pair, nil }
	h, err := lockmw.New(fetch, lockcore.NewMemoryStore(), key, // lockcore.NewDynamoStore in a Lambda
		lockmw.WithAnswers(lockmw.Answers{Store: answers}))
	if err != nil {
		log.Fatal(err)
	}
	_ = h // lambda.Start(h)
}
