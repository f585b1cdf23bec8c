package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

var watchCommand = command{
	name:    "watch",
	args:    "[--table T] [--interval 1s] [--output text|json] GROUP ID",
	summary: "print each change of a lock item until Ctrl-C",
	detail: `One strongly consistent read every --interval; a line for the first read and for
every change: a new holder (take-over), a renewal, a release, a lease that
lapsed. An absent item is watched until it appears. With --output json, each
line is a JSON object: the item as herdlock get --output json shows it, with
"at", the time of the read.`,
	example: "herdlock watch --table locks --interval 200ms fetch-cache EUR-USD",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var c common
		c.register(fs)
		interval := durationFlag(fs, "interval", time.Second, "the time `D` between two strongly consistent reads")
		return func(ctx context.Context, e *env, args []string) error {
			if err := wantArgs(args, "GROUP", "ID"); err != nil {
				return err
			}
			if *interval < 10*time.Millisecond {
				return usageErr("--interval %v: want at least 10ms", *interval)
			}
			store, _, err := c.store(ctx, e)
			if err != nil {
				return err
			}
			err = watch(ctx, e, store, lockcore.Key{Group: args[0], ID: args[1]}, *interval, c.output.json())
			return tableErr(err, store.Table())
		}
	},
}

// state is what watch compares between two reads: a change of any of these
// is printed. The heartbeat and lease times change with Beat.
type state struct {
	found    bool
	revision string
	fence    int64
	beat     int64
	released bool
	result   lockcore.Result
	verdict  string
}

// watch reads the item every interval and prints a line for the first read
// and for each change, until ctx ends (Ctrl-C), which is a clean exit. A
// failed first read is an error; later failures are reported and retried.
// With asJSON each line is a watchLine.
func watch(ctx context.Context, e *env, store *lockcore.DynamoStore, key lockcore.Key, interval time.Duration, asJSON bool) error {
	var last *state
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		it, found, err := store.Get(ctx, key)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && last == nil:
			return err
		case err != nil:
			fmt.Fprintf(e.stderr, "%s  read failed: %v\n", e.now().UTC().Format(clockFormat), err)
		default:
			now := e.now()
			cur := state{found: found}
			v := absentView(key)
			line := verdictAbsent
			if found {
				v = newView(it, now)
				cur = state{true, it.Revision, it.Fence, it.Beat, it.Released, it.Result, v.Verdict}
				line = fmt.Sprintf("%s  revision %s  renewals %d  holder %s", v.summary(now), it.Revision, it.Beat, orDash(it.Holder))
			}
			if last == nil || cur != *last {
				if asJSON {
					b, _ := json.Marshal(watchLine{At: now.UTC(), view: v}) // a view always marshals
					fmt.Fprintf(e.stdout, "%s\n", b)
				} else {
					fmt.Fprintf(e.stdout, "%s  %s\n", now.UTC().Format(clockFormat), line)
				}
				last = &cur
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

const clockFormat = "15:04:05.000"

// watchLine is one line of watch --output json: the time of the read and
// the item's view.
type watchLine struct {
	At time.Time `json:"at"`
	view
}
