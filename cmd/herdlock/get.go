package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/herdlock/herdlock/lockcore"
)

var getCommand = command{
	name:    "get",
	args:    "[--table T] [--json] GROUP ID",
	summary: "show one lock item, decoded, with a one-line verdict",
	example: "herdlock get --table locks fetch-cache EUR-USD",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var tf tableFlags
		tf.register(fs)
		asJSON := fs.Bool("json", false, "print the item as JSON")
		return func(ctx context.Context, e *env, args []string) error {
			if err := wantArgs(args, "GROUP", "ID"); err != nil {
				return err
			}
			store, _, err := tf.store(ctx, e)
			if err != nil {
				return err
			}
			key := lockcore.Key{Group: args[0], ID: args[1]}
			it, found, err := store.Get(ctx, key)
			if err != nil {
				return err
			}
			now := e.now()
			if !found {
				if *asJSON {
					_ = writeJSON(e.stdout, map[string]string{"verdict": verdictAbsent, "group": key.Group, "id": key.ID})
				} else {
					fmt.Fprintf(e.stdout, "verdict: %s (no item %s in %s)\n", verdictAbsent, lockcore.PartitionKey(key), store.Table())
				}
				return &exitErr{exitNotFound, fmt.Errorf("%s/%s: no lock item", key.Group, key.ID)}
			}
			v := newView(it, now)
			if *asJSON {
				return writeJSON(e.stdout, v)
			}
			return v.writeDetail(e.stdout, now)
		}
	},
}
