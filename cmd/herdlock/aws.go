package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore"
)

// conn holds the connection flags every command takes.
type conn struct {
	region, profile, endpoint string
}

// connFlags names the flags of conn, which the help lists apart.
var connFlags = []string{"region", "profile", "endpoint-url"}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.region, "region", "", "the AWS Region `REGION` (default: from the AWS configuration)")
	fs.StringVar(&c.profile, "profile", "", "the shared configuration profile `NAME` (default: $AWS_PROFILE or default)")
	fs.StringVar(&c.endpoint, "endpoint-url", "", "the DynamoDB endpoint `URL`, such as http://localhost:8000 for a local server")
}

// client returns a DynamoDB client from the AWS configuration and the
// flags.
func (c *conn) client(ctx context.Context) (*dynamodb.Client, error) {
	var opts []func(*config.LoadOptions) error
	if c.region != "" {
		opts = append(opts, config.WithRegion(c.region))
	}
	if c.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, &exitErr{exitUsage, fmt.Errorf("no AWS Region: set --region or AWS_REGION")}
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if c.endpoint != "" {
			o.BaseEndpoint = aws.String(c.endpoint)
		}
	}), nil
}

// common are the flags of every command: the connection, the table and
// the output format.
type common struct {
	conn
	table  string
	output output
}

// register adds the common flags to fs.
func (c *common) register(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.table, "table", "", "the lock table `T` (default: $"+envTable+")")
	c.output.register(fs)
}

// tableName returns the table: positional (create-table's TABLE
// argument, may be empty), else --table, else $HERDLOCK_TABLE, checked
// against DynamoDB's rule for table names.
func (c *common) tableName(e *env, positional string) (string, error) {
	table := c.table
	switch {
	case positional != "" && table != "" && positional != table:
		return "", usageErr("two tables: argument %q and --table %q", positional, table)
	case positional != "":
		table = positional
	case table == "":
		table = e.getenv(envTable)
	}
	if strings.TrimSpace(table) == "" {
		return "", usageErr("no table: give --table or set $%s", envTable)
	}
	if !tableNameRule.MatchString(table) {
		return "", usageErr("table name %q: want 3 to 255 of a-z A-Z 0-9 _ . -", table)
	}
	return table, nil
}

// tableNameRule is DynamoDB's rule for table names.
var tableNameRule = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// store returns a DynamoStore on the table, and its client.
func (c *common) store(ctx context.Context, e *env) (*lockcore.DynamoStore, *dynamodb.Client, error) {
	table, err := c.tableName(e, "")
	if err != nil {
		return nil, nil, err
	}
	client, err := c.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := lockcore.NewDynamoStore(client, table)
	if err != nil {
		return nil, nil, err
	}
	return s, client, nil
}

// tableErr turns DynamoDB's ResourceNotFoundException on table into a
// "table not found" error with exit code exitTableNotFound; other errors
// pass unchanged.
func tableErr(err error, table string) error {
	var rnf *types.ResourceNotFoundException
	if err == nil || !errors.As(err, &rnf) {
		return err
	}
	return &exitErr{exitTableNotFound, fmt.Errorf(
		"table %q not found (check --table or $%s, the Region and the endpoint): %w", table, envTable, err)}
}
