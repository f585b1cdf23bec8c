package xraytracer

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/instrumentation/awsv2"
)

// InstrumentDynamoDB adds X-Ray subsegments for every call of the AWS SDK
// clients made from cfg, the DynamoDB client of a lockcore.DynamoStore
// among them, with the X-Ray SDK's awsv2 instrumentation:
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	xraytracer.InstrumentDynamoDB(&cfg)
//	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), table)
//
// The lock's calls then appear under the "herdlock" subsegment, release
// calls under "lock.release". A call made with a context that carries no
// segment is not traced (after [Setup], it logs at debug level). It is not
// safe to call while clients are being made from cfg.
func InstrumentDynamoDB(cfg *aws.Config) {
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}
