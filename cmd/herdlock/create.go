package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/herdlock/herdlock/lockcore"
)

var createTableCommand = command{
	name:    "create-table",
	args:    "[--print-cfn] [--ttl=false] TABLE",
	summary: "create a lock table, or print it as CloudFormation (--print-cfn)",
	detail: "The table has the partition key " + lockcore.AttrLockKey + " (S), no sort key, and on-demand billing,\n" +
		"as lockcore.CreateTable makes it; TTL is then turned on for the " + lockcore.AttrTTL + " attribute, for\n" +
		"clean-up only (herdlock never uses it as expiry). An existing table is fine.",
	example: "herdlock create-table --region eu-west-1 locks",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var c conn
		c.register(fs)
		printCFN := fs.Bool("print-cfn", false, "print a CloudFormation template with the table and create nothing")
		ttl := fs.Bool("ttl", true, "turn on TTL on the "+lockcore.AttrTTL+" attribute (clean-up of old items only, never expiry)")
		return func(ctx context.Context, e *env, args []string) error {
			if err := wantArgs(args, "TABLE"); err != nil {
				return err
			}
			table := args[0]
			if !tableName.MatchString(table) {
				return usageErr("table name %q: want 3 to 255 of a-z A-Z 0-9 _ . -", table)
			}
			if *printCFN {
				return writeCFN(e.stdout, table, *ttl)
			}
			client, err := c.client(ctx)
			if err != nil {
				return err
			}
			if err := lockcore.CreateTable(ctx, client, table); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "table %s is active (partition key %s, on demand)\n", table, lockcore.AttrLockKey)
			if !*ttl {
				return nil
			}
			return enableTTL(ctx, e, client, table)
		}
	},
}

// tableName is DynamoDB's rule for table names.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

func enableTTL(ctx context.Context, e *env, client *dynamodb.Client, table string) error {
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(lockcore.AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	var api smithy.APIError
	switch {
	case err == nil:
		fmt.Fprintf(e.stdout, "TTL on %s is being turned on (clean-up only; DynamoDB deletes expired items within days)\n", lockcore.AttrTTL)
		return nil
	case errors.As(err, &api) && api.ErrorCode() == "ValidationException" && isTTLAlreadyOn(api):
		fmt.Fprintf(e.stdout, "TTL on %s is already on\n", lockcore.AttrTTL)
		return nil
	case errors.As(err, &api) && api.ErrorCode() == "UnknownOperationException":
		// Some local servers (dynalite) have no TTL; DynamoDB always has.
		fmt.Fprintf(e.stderr, "herdlock create-table: this server does not support UpdateTimeToLive; TTL not turned on\n")
		return nil
	default:
		return fmt.Errorf("turning on TTL: %w", err)
	}
}

func isTTLAlreadyOn(api smithy.APIError) bool {
	return regexp.MustCompile(`(?i)already enabled`).MatchString(api.ErrorMessage())
}

// writeCFN prints a template holding the table that create-table makes,
// kept when the stack is deleted or the table replaced.
func writeCFN(w io.Writer, table string, ttl bool) error {
	ttlBlock := ""
	if ttl {
		ttlBlock = fmt.Sprintf(`      TimeToLiveSpecification:
        # Clean-up of old items only: herdlock never uses it as expiry.
        AttributeName: %s
        Enabled: true
`, lockcore.AttrTTL)
	}
	_, err := fmt.Fprintf(w, `AWSTemplateFormatVersion: "2010-09-09"
Description: herdlock lock table
Resources:
  LockTable:
    Type: AWS::DynamoDB::Table
    # Deleting the table resets every fence: keep it.
    DeletionPolicy: Retain
    UpdateReplacePolicy: Retain
    Properties:
      TableName: %s
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - AttributeName: %s
          AttributeType: S
      KeySchema:
        - AttributeName: %s
          KeyType: HASH
%sOutputs:
  LockTableName:
    Value: !Ref LockTable
  LockTableArn:
    Value: !GetAtt LockTable.Arn
`, table, lockcore.AttrLockKey, lockcore.AttrLockKey, ttlBlock)
	return err
}
