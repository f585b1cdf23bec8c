package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/herdlock/herdlock/lockcore"
)

var releaseCommand = command{
	name:    "release",
	args:    "[--table T] --revision R [--yes] GROUP ID",
	summary: "force-release a lock, only while it carries the revision you saw",
	detail: `The lock is released as a failure, in one write conditioned on the item
still carrying revision R (as herdlock get shows it), so it can never release
a newer holder. The next caller, or one waiter, then takes it over. A holder
that is still running loses its lease at its next renewal; write through the
fence so that its late writes are refused. On an item already released with
a recent failure (one that holds take-overs back until its not-before time
or for the rest of its failure episode), it clears that hold-back instead.
Asks for confirmation unless --yes.`,
	example: "herdlock release --table locks fetch-cache EUR-USD --revision 0193b5e2-7c1d-7a4e-9f3b-2d9c1e8a5b71",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var tf tableFlags
		tf.register(fs)
		revision := fs.String("revision", "", "the revision the item must still carry (required; see herdlock get)")
		yes := fs.Bool("yes", false, "do not ask for confirmation")
		return func(ctx context.Context, e *env, args []string) error {
			if err := wantArgs(args, "GROUP", "ID"); err != nil {
				return err
			}
			if strings.TrimSpace(*revision) == "" {
				return usageErr("--revision is required: the revision shown by herdlock get")
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
			if !found {
				return &exitErr{exitNotFound, fmt.Errorf("%s/%s: no lock item, nothing to release", key.Group, key.ID)}
			}
			now := e.now()
			if refusal := refuse(it, *revision); refusal != nil {
				return refusal
			}
			if it.Released && it.FailRecentUntilMs <= now.UnixMilli() {
				fmt.Fprintf(e.stdout, "%s/%s: already released with failure at revision %s (fence %d); nothing to do\n",
					key.Group, key.ID, it.Revision, it.Fence)
				return nil
			}
			if !*yes {
				question := "Release it as a failure, so that the next caller takes over?"
				if it.Released {
					question = "Clear its recent failure, so that the next caller may take over now?"
				}
				fmt.Fprintf(e.stderr, "%s/%s: %s\n%s [y/N] ", key.Group, key.ID, newView(it, now).summary(now), question)
				if !confirmed(e) {
					return &exitErr{exitNotConfirmed, errors.New("not confirmed; nothing released")}
				}
			}
			// A failure that is not recent holds nothing back: the next
			// caller takes over at once, and its own failure would start a
			// new episode.
			done, err := store.Release(ctx, lockcore.ReleaseRequest{
				Key: key, Revision: *revision, NowMs: e.now().UnixMilli(), Result: lockcore.Failure,
				Failures: it.Failures, FailReason: operatorReason,
			})
			var ce *lockcore.ConditionError
			if errors.As(err, &ce) {
				if ce.Current == nil {
					return &exitErr{exitNotFound, fmt.Errorf("%s/%s: the item is gone, nothing released", key.Group, key.ID)}
				}
				if refusal := refuse(*ce.Current, *revision); refusal != nil {
					return refusal
				}
				return &exitErr{exitRefused, fmt.Errorf("refused by the table: %w", err)}
			}
			if err != nil {
				return err
			}
			if done.Revision != *revision {
				// The store recognised an earlier failure release of this
				// revision, and a newer holder has the lock since.
				fmt.Fprintf(e.stdout, "%s/%s: revision %s was already released with failure; revision %s (fence %d) holds it now; nothing written\n",
					key.Group, key.ID, *revision, done.Revision, done.Fence)
				return nil
			}
			fmt.Fprintf(e.stdout, "%s/%s: released with failure at revision %s (fence %d)\n",
				key.Group, key.ID, done.Revision, done.Fence)
			return nil
		}
	},
}

// operatorReason is the failure reason of a release by this command.
const operatorReason = "operator_release"

// refuse returns the refusal for releasing it at revision, or nil when the
// release may go ahead.
func refuse(it lockcore.Item, revision string) error {
	switch {
	case it.Revision != revision:
		return &exitErr{exitRefused, fmt.Errorf(
			"refused: the item is at revision %s (fence %d), not %s: another holder acquired it since; nothing released",
			it.Revision, it.Fence, revision)}
	case it.Released && it.Result == lockcore.Success:
		return &exitErr{exitRefused, fmt.Errorf(
			"refused: revision %s (fence %d) is already released with success; nothing released", it.Revision, it.Fence)}
	}
	return nil
}

// confirmed reads one answer line; only "y" or "yes" confirms.
func confirmed(e *env) bool {
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
