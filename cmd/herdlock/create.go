package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var createTableCommand = command{
	name:    "create-table",
	args:    "[--table T] [--print-cfn] [--ttl=false] [--output text|json] [TABLE]",
	summary: "create a lock table, or print it as CloudFormation (--print-cfn)",
	detail: "The table is TABLE, else --table, else $" + envTable + ". It has the partition key " + storeapi.AttrLockKey + " (S),\n" +
		"no sort key, and on-demand billing, as lockcore.CreateTable makes it; TTL is then turned\n" +
		"on for the " + storeapi.AttrTTL + " attribute, for clean-up only (herdlock never uses it as expiry).\n" +
		"An existing table is fine. --print-cfn with --output json prints the template as JSON.",
	example: "herdlock create-table --region eu-west-1 --table locks",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var c common
		c.register(fs)
		printCFN := fs.Bool("print-cfn", false, "print a CloudFormation template with the table and create nothing")
		ttl := fs.Bool("ttl", true, "turn on TTL on the "+storeapi.AttrTTL+" attribute (clean-up of old items only, never expiry)")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 1 {
				return usageErr("want at most 1 argument (TABLE), got %d", len(args))
			}
			positional := ""
			if len(args) == 1 {
				if strings.TrimSpace(args[0]) == "" {
					return usageErr("blank TABLE")
				}
				positional = args[0]
			}
			table, err := c.tableName(e, positional)
			if err != nil {
				return err
			}
			if *printCFN {
				return writeCFN(e.stdout, table, *ttl, c.output.json())
			}
			client, err := c.client(ctx)
			if err != nil {
				return err
			}
			if err := lockcore.CreateTable(ctx, client, table); err != nil {
				return err
			}
			res := created{Table: table, Status: "ACTIVE", PartitionKey: storeapi.AttrLockKey, TTL: ttlOff}
			if *ttl {
				if res.TTL, err = enableTTL(ctx, e, client, table); err != nil {
					return err
				}
			}
			if c.output.json() {
				return writeJSON(e.stdout, res)
			}
			res.writeText(e.stdout)
			return nil
		}
	},
}

// created is what create-table reports, and its JSON form.
type created struct {
	Table        string `json:"table"`
	Status       string `json:"status"`
	PartitionKey string `json:"partitionKey"`
	TTL          string `json:"ttl"` // one of the ttl* states
}

// States of the table's TTL after create-table.
const (
	ttlOff         = "off"         // --ttl=false
	ttlEnabling    = "enabling"    // turned on now; DynamoDB takes a while
	ttlOn          = "on"          // was already on
	ttlUnsupported = "unsupported" // a local server without TTL
)

func (r created) writeText(w io.Writer) {
	fmt.Fprintf(w, "table %s is active (partition key %s, on demand)\n", r.Table, r.PartitionKey)
	switch r.TTL {
	case ttlEnabling:
		fmt.Fprintf(w, "TTL on %s is being turned on (clean-up only; DynamoDB deletes expired items within days)\n", storeapi.AttrTTL)
	case ttlOn:
		fmt.Fprintf(w, "TTL on %s is already on\n", storeapi.AttrTTL)
	}
}

// enableTTL turns on TTL on the table's AttrTTL and returns its state.
func enableTTL(ctx context.Context, e *env, client *dynamodb.Client, table string) (string, error) {
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(storeapi.AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	var api smithy.APIError
	switch {
	case err == nil:
		return ttlEnabling, nil
	case errors.As(err, &api) && api.ErrorCode() == "ValidationException" && isTTLAlreadyOn(api):
		return ttlOn, nil
	case errors.As(err, &api) && api.ErrorCode() == "UnknownOperationException":
		// Some local servers (dynalite) have no TTL; DynamoDB always has.
		fmt.Fprintf(e.stderr, "herdlock create-table: this server does not support UpdateTimeToLive; TTL not turned on\n")
		return ttlUnsupported, nil
	default:
		return "", fmt.Errorf("turning on TTL: %w", err)
	}
}

func isTTLAlreadyOn(api smithy.APIError) bool {
	return regexp.MustCompile(`(?i)already enabled`).MatchString(api.ErrorMessage())
}
