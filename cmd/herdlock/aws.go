package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/lockcore"
)

// conn holds the connection flags every command takes.
type conn struct {
	region, profile, endpoint string
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.region, "region", "", "AWS Region (default: from the AWS configuration)")
	fs.StringVar(&c.profile, "profile", "", "shared configuration profile (default: $AWS_PROFILE or default)")
	fs.StringVar(&c.endpoint, "endpoint-url", "", "DynamoDB endpoint, such as http://localhost:8000 for a local server")
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

// tableFlags are the flags of the commands that read one table.
type tableFlags struct {
	conn
	table string
}

func (t *tableFlags) register(fs *flag.FlagSet) {
	t.conn.register(fs)
	fs.StringVar(&t.table, "table", "", "lock table (default: $"+envTable+")")
}

// store returns the table's name and a DynamoStore and client on it.
func (t *tableFlags) store(ctx context.Context, e *env) (*lockcore.DynamoStore, *dynamodb.Client, error) {
	table := t.table
	if table == "" {
		table = e.getenv(envTable)
	}
	if strings.TrimSpace(table) == "" {
		return nil, nil, usageErr("no table: give --table or set $%s", envTable)
	}
	client, err := t.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := lockcore.NewDynamoStore(client, table)
	if err != nil {
		return nil, nil, err
	}
	return s, client, nil
}
