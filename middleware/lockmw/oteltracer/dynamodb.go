package oteltracer

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentDynamoDB returns a DynamoDB client option that traces every
// call of the client with spans from tp, through the client's native
// tracer provider ([SDKTracerProvider]), and adds the semantic
// conventions' aws.dynamodb.table_names (and aws.dynamodb.consistent_read
// for reads) to each operation span:
//
//	client := dynamodb.NewFromConfig(cfg, oteltracer.InstrumentDynamoDB(tp))
//
// A call is a child of the span in its context: the lock's calls are under
// the "herdlock" span, a release's under "lock.release". With a nil tp the
// option changes nothing.
func InstrumentDynamoDB(tp trace.TracerProvider) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		if tp == nil {
			return
		}
		o.TracerProvider = SDKTracerProvider(tp)
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(tableAttributes{}, middleware.After)
		})
	}
}

// tableAttributes adds the table name of the operation's input to the
// operation span.
type tableAttributes struct{}

func (tableAttributes) ID() string { return "herdlock.oteltracer.tableAttributes" }

var (
	tableNamesKey     = attribute.Key("aws.dynamodb.table_names")
	consistentReadKey = attribute.Key("aws.dynamodb.consistent_read")
)

func (tableAttributes) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if s, ok := tracing.GetSpan(ctx); ok {
		if s, ok := s.(*sdkSpan); ok && s.otel != nil && s.otel.IsRecording() {
			s.otel.SetAttributes(tableInputAttributes(in.Parameters)...)
		}
	}
	return next.HandleInitialize(ctx, in)
}

func tableInputAttributes(params any) []attribute.KeyValue {
	var table *string
	var consistent *bool
	switch p := params.(type) {
	case *dynamodb.GetItemInput:
		table, consistent = p.TableName, p.ConsistentRead
	case *dynamodb.PutItemInput:
		table = p.TableName
	case *dynamodb.UpdateItemInput:
		table = p.TableName
	case *dynamodb.DeleteItemInput:
		table = p.TableName
	case *dynamodb.QueryInput:
		table, consistent = p.TableName, p.ConsistentRead
	case *dynamodb.ScanInput:
		table, consistent = p.TableName, p.ConsistentRead
	case *dynamodb.DescribeTableInput:
		table = p.TableName
	case *dynamodb.CreateTableInput:
		table = p.TableName
	}
	if table == nil {
		return nil
	}
	kvs := []attribute.KeyValue{tableNamesKey.StringSlice([]string{aws.ToString(table)})}
	if consistent != nil {
		kvs = append(kvs, consistentReadKey.Bool(*consistent))
	}
	return kvs
}
