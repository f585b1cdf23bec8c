package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var listCommand = command{
	name:    "list",
	args:    "[--table T] [--group G] [--held | --abandoned] [--output text|json]",
	summary: "list the lock items (a paginated Scan), as a table or JSON",
	example: "herdlock list --table locks --group fetch-cache --abandoned",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var c common
		c.register(fs)
		group := fs.String("group", "", "only the lock group `G`")
		held := fs.Bool("held", false, "only held items")
		abandoned := fs.Bool("abandoned", false, "only abandoned items (lease or hard maximum lapsed, not released)")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("list takes no arguments, got %q", args)
			}
			if *held && *abandoned {
				return usageErr("--held and --abandoned are exclusive")
			}
			store, client, err := c.store(ctx, e)
			if err != nil {
				return err
			}
			keep := func(string) bool { return true }
			switch {
			case *held:
				keep = func(v string) bool { return v == verdictHeld }
			case *abandoned:
				keep = func(v string) bool { return v == verdictAbandoned }
			}
			out := listWriter{e: e, json: c.output.json()}
			var bad []error
			now := e.now()
			for it, err := range lockcore.List(ctx, client, store.Table(), *group) {
				var ie *storeapi.ItemError
				if errors.As(err, &ie) {
					fmt.Fprintf(e.stderr, "herdlock list: %v\n", ie)
					bad = append(bad, ie)
					continue
				}
				if err != nil {
					out.abort()
					return tableErr(err, store.Table())
				}
				if v := newView(it, now); keep(v.Verdict) {
					out.add(v, now)
				}
			}
			if err := out.close(); err != nil {
				return err
			}
			if len(bad) > 0 {
				return fmt.Errorf("%d items do not decode", len(bad))
			}
			return nil
		}
	},
}

// listWriter prints the listing as it arrives: a table, or a JSON array
// written element by element.
type listWriter struct {
	e    *env
	json bool
	tw   *tabwriter.Writer
	n    int
}

func (l *listWriter) add(v view, now time.Time) {
	if l.json {
		b, _ := json.Marshal(v) // a view always marshals
		sep := ",\n  "
		if l.n == 0 {
			sep = "[\n  "
		}
		fmt.Fprintf(l.e.stdout, "%s%s", sep, b)
		l.n++
		return
	}
	if l.tw == nil {
		l.tw = tabwriter.NewWriter(l.e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(l.tw, "GROUP\tID\tVERDICT\tFENCE\tLEASE\tHOLDER\tREVISION")
	}
	fmt.Fprintf(l.tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", oneLine(v.Group, 32), oneLine(v.ID, 32), v.Verdict,
		v.Fence, listLease(v, now), oneLine(orDash(v.Holder), 48), v.Revision)
	l.n++
}

// abort ends a listing cut short by an error: the rows of a table so far
// are flushed, and nothing more is written (no "no lock items", and no
// closing bracket that would make a partial JSON array look complete).
func (l *listWriter) abort() {
	if l.tw != nil {
		l.tw.Flush()
	}
}

func (l *listWriter) close() error {
	if l.json {
		if l.n == 0 {
			_, err := fmt.Fprintln(l.e.stdout, "[]")
			return err
		}
		_, err := fmt.Fprintln(l.e.stdout, "\n]")
		return err
	}
	if l.tw == nil {
		fmt.Fprintln(l.e.stderr, "no lock items")
		return nil
	}
	return l.tw.Flush()
}

// listLease is the LEASE column: when the lease lapses or lapsed, or when
// the item was released.
func listLease(v view, now time.Time) string {
	if v.Released {
		return "released " + since(v.ReleasedAt, now)
	}
	return deadline(v.LeaseUntil, now)
}
