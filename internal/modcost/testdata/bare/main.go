// The baseline: aws-lambda-go and a DynamoDB client, no herdlock.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	lambda.Start(func(ctx context.Context) (int, error) {
		out, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			return 0, err
		}
		return len(out.TableNames), nil
	})
}
