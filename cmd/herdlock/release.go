package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var releaseCommand = command{
	name:    "release",
	args:    "[--table T] --revision R [--yes] [--output text|json] GROUP ID",
	summary: "force-release a lock, only while it carries the revision you saw",
	detail: `The lock is released as a failure, in one write conditioned on the item
still carrying revision R (as herdlock get shows it), so it can never release
a newer holder. The next caller, or one waiter, then takes it over. A holder
that is still running loses its lease within a renewal interval, and its own
release never writes over this one; write through the fence so that its late
writes to your data are refused. On an item already released with
a recent failure (one that holds take-overs back until its not-before time
or for the rest of its failure episode), it clears that hold-back instead.
A revision the item does not carry is refused (exit 4), and the message says
which: the previous holder's (the lock was taken over since), or one the item
never carried (mistyped, or older than the last take-over).
Asks for confirmation unless --yes.`,
	example: "herdlock release --table locks fetch-cache EUR-USD --revision 3f9c2a7e5b1d48c6a0e2f4b6d8c1e3a5",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var c common
		c.register(fs)
		revision := fs.String("revision", "", "the revision `R` the item must still carry (required; 32 hex digits, as herdlock get shows it)")
		yes := fs.Bool("yes", false, "do not ask for confirmation")
		return func(ctx context.Context, e *env, args []string) error {
			if err := wantArgs(args, "GROUP", "ID"); err != nil {
				return err
			}
			if strings.TrimSpace(*revision) == "" {
				return usageErr("--revision is required: the revision shown by herdlock get")
			}
			if !revisionShape.MatchString(*revision) {
				return usageErr("--revision %q: want 32 lower-case hex digits, as herdlock get shows it", *revision)
			}
			store, _, err := c.store(ctx, e)
			if err != nil {
				return err
			}
			r := releaser{e: e, store: store, key: lockcore.Key{Group: args[0], ID: args[1]}, revision: *revision, yes: *yes}
			res, err := r.release(ctx)
			if err != nil {
				return tableErr(err, store.Table())
			}
			if c.output.json() {
				return writeJSON(e.stdout, res)
			}
			fmt.Fprintln(e.stdout, res.text())
			return nil
		}
	},
}

// operatorReason is the failure reason of a release by this command: the
// one a holder's own release never writes over.
const operatorReason = storeapi.OperatorReleaseReason

// released is what release did, and its JSON form.
type released struct {
	Group    string `json:"group"`
	ID       string `json:"id"`
	Action   string `json:"action"`   // one of the action* values
	Revision string `json:"revision"` // the revision given
	Fence    int64  `json:"fence"`    // the item's fence after the command
	// Current is the revision holding the lock now, when a newer holder
	// took it after an earlier release of Revision (actionAlreadyReleased).
	Current string `json:"currentRevision,omitempty"`
}

// Actions of release.
const (
	actionReleased        = "released"         // released with failure now
	actionCleared         = "cleared"          // a recent failure's hold-back cleared
	actionNothingToDo     = "nothing-to-do"    // already released with failure, nothing held back
	actionAlreadyReleased = "already-released" // released before; a newer holder has it now
)

func (r released) text() string {
	key := r.Group + "/" + r.ID
	switch r.Action {
	case actionNothingToDo:
		return fmt.Sprintf("%s: already released with failure at revision %s (fence %d); nothing to do", key, r.Revision, r.Fence)
	case actionAlreadyReleased:
		return fmt.Sprintf("%s: revision %s was already released with failure; revision %s (fence %d) holds it now; nothing written",
			key, r.Revision, r.Current, r.Fence)
	case actionCleared:
		return fmt.Sprintf("%s: released with failure at revision %s (fence %d); its recent failure no longer holds take-overs back", key, r.Revision, r.Fence)
	default:
		return fmt.Sprintf("%s: released with failure at revision %s (fence %d)", key, r.Revision, r.Fence)
	}
}

// releaser is one release command.
type releaser struct {
	e        *env
	store    *lockcore.DynamoStore
	key      lockcore.Key
	revision string
	yes      bool
}

func (r *releaser) release(ctx context.Context) (released, error) {
	key := r.key
	out := released{Group: key.Group, ID: key.ID, Revision: r.revision}
	it, found, err := r.store.Get(ctx, key)
	if err != nil {
		return out, err
	}
	if !found {
		return out, &exitErr{exitNotFound, fmt.Errorf("%s/%s: no lock item, nothing to release", key.Group, key.ID)}
	}
	now := r.e.now()
	if refusal := refuse(it, r.revision); refusal != nil {
		return out, refusal
	}
	if it.Released && it.FailRecentUntilMs <= now.UnixMilli() {
		out.Action, out.Fence = actionNothingToDo, it.Fence
		return out, nil
	}
	if !r.yes {
		question := "Release it as a failure, so that the next caller takes over?"
		if it.Released {
			question = "Clear its recent failure, so that the next caller may take over now?"
		}
		fmt.Fprintf(r.e.stderr, "%s/%s: %s\n%s [y/N] ", key.Group, key.ID, newView(it, now).summary(now), question)
		if !confirmed(r.e) {
			return out, &exitErr{exitNotConfirmed, errors.New("not confirmed; nothing released")}
		}
	}
	// A failure that is not recent holds nothing back: the next caller
	// takes over at once, and its own failure would start a new episode.
	done, err := r.store.Release(ctx, storeapi.ReleaseRequest{
		Key: key, Revision: r.revision, NowMs: r.e.now().UnixMilli(), Result: lockcore.Failure,
		Failures: it.Failures, FailReason: operatorReason,
	})
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) {
		if ce.Current == nil {
			return out, &exitErr{exitNotFound, fmt.Errorf("%s/%s: the item is gone, nothing released", key.Group, key.ID)}
		}
		if refusal := refuse(*ce.Current, r.revision); refusal != nil {
			return out, refusal
		}
		return out, &exitErr{exitRefused, fmt.Errorf("refused by the table: %w", err)}
	}
	if err != nil {
		return out, err
	}
	out.Fence = done.Fence
	switch {
	case done.Revision != r.revision:
		// The store recognised an earlier failure release of this
		// revision, and a newer holder has the lock since.
		out.Action, out.Current = actionAlreadyReleased, done.Revision
	case it.Released:
		out.Action = actionCleared
	default:
		out.Action = actionReleased
	}
	return out, nil
}

// revisionShape is the shape of the revisions lockcore writes: 16 random
// bytes in lower-case hex.
var revisionShape = regexp.MustCompile(`^[0-9a-f]{32}$`)

// refuse returns the refusal for releasing it at revision, or nil when the
// release may go ahead. A revision the item does not carry is told apart by
// what the item shows: its previous holder's revision means the lock was
// taken over since; any other was never this item's latest two, so it is
// mistyped or older than the last take-over.
func refuse(it storeapi.Item, revision string) error {
	switch {
	case it.Revision != revision && it.PrevRevision == revision:
		return &exitErr{exitRefused, fmt.Errorf(
			"refused: revision %s is stale: another holder acquired the lock since and it is at revision %s (fence %d); nothing released",
			revision, it.Revision, it.Fence)}
	case it.Revision != revision:
		hint := "mistyped, or older than the last take-over"
		if !revisionShape.MatchString(revision) {
			hint = "mistyped? revisions are 32 lower-case hex digits, as herdlock get shows them"
		}
		return &exitErr{exitRefused, fmt.Errorf(
			"refused: revision %q is not this item's: it is at revision %s (fence %d) and its previous holder's was %s (%s); nothing released",
			revision, it.Revision, it.Fence, orDash(it.PrevRevision), hint)}
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
