package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var getCommand = command{
	name:    "get",
	args:    "[--table T] [--output text|json] GROUP ID",
	summary: "show one lock item, decoded, with a one-line verdict",
	example: "herdlock get --table locks fetch-cache EUR-USD",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var c common
		c.register(fs)
		return func(ctx context.Context, e *env, args []string) error {
			if err := wantArgs(args, "GROUP", "ID"); err != nil {
				return err
			}
			store, _, err := c.store(ctx, e)
			if err != nil {
				return err
			}
			key := lockcore.Key{Group: args[0], ID: args[1]}
			it, found, err := store.Get(ctx, key)
			if err != nil {
				return tableErr(err, store.Table())
			}
			now := e.now()
			if !found {
				if c.output.json() {
					_ = writeJSON(e.stdout, absentView(key))
				} else {
					fmt.Fprintf(e.stdout, "verdict: %s (no item %s in %s)\n", verdictAbsent, storeapi.PartitionKey(key), store.Table())
				}
				return &exitErr{exitNotFound, fmt.Errorf("%s/%s: no lock item", key.Group, key.ID)}
			}
			v := newView(it, now)
			if c.output.json() {
				return writeJSON(e.stdout, v)
			}
			return v.writeDetail(e.stdout, now)
		}
	},
}
