package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Verdicts of an item, judged with this machine's clock.
const (
	verdictHeld           = "held"
	verdictAbandoned      = "abandoned"
	verdictReleasedOK     = "released with success"
	verdictReleasedFailed = "released with failure"
	verdictAbsent         = "absent"
)

// verdict judges it at now: released items by their result; an unreleased
// item is held while both its lease and its hard maximum lie ahead, and
// abandoned once either lapsed (waiters then take it over).
func verdict(it storeapi.Item, now time.Time) string {
	nowMs := now.UnixMilli()
	switch {
	case it.Released && it.Result == lockcore.Success:
		return verdictReleasedOK
	case it.Released:
		return verdictReleasedFailed
	case it.LeaseUntilMs < nowMs || it.ExpiresAtMs < nowMs:
		return verdictAbandoned
	default:
		return verdictHeld
	}
}

// view is an item as the CLI shows it, and its JSON form.
type view struct {
	Verdict       string     `json:"verdict"`
	Group         string     `json:"group"`
	ID            string     `json:"id"`
	PartitionKey  string     `json:"partitionKey"`
	Holder        string     `json:"holder"`
	Revision      string     `json:"revision"`
	Fence         int64      `json:"fence"`
	Renewals      int64      `json:"renewals"`
	LeaseMs       int64      `json:"leaseMs"`
	HeartbeatAt   *time.Time `json:"heartbeatAt,omitempty"`
	LeaseUntil    *time.Time `json:"leaseUntil,omitempty"`
	ExpiresAt     *time.Time `json:"expiresAt,omitempty"`
	Released      bool       `json:"released"`
	Result        string     `json:"result,omitempty"`
	ResultRef     string     `json:"resultRef,omitempty"`
	ResultFence   int64      `json:"resultFence,omitempty"`
	ReleasedAt    *time.Time `json:"releasedAt,omitempty"`
	RecordAccount string     `json:"recordAccount,omitempty"`
	TTL           *time.Time `json:"ttl,omitempty"`
	PrevRevision  string     `json:"prevRevision,omitempty"`
	PrevResult    string     `json:"prevResult,omitempty"`
	PrevReason    string     `json:"prevFailReason,omitempty"`
	Failures      int64      `json:"failures,omitempty"`
	FailReason    string     `json:"failReason,omitempty"`
	NotBefore     *time.Time `json:"notBefore,omitempty"`
	FailRecent    *time.Time `json:"failRecentUntil,omitempty"`
	AnswerBytes   int        `json:"answerBytes,omitempty"`
}

func newView(it storeapi.Item, now time.Time) view {
	return view{
		Verdict:       verdict(it, now),
		Group:         it.Key.Group,
		ID:            it.Key.ID,
		PartitionKey:  storeapi.PartitionKey(it.Key),
		Holder:        it.Holder,
		Revision:      it.Revision,
		Fence:         it.Fence,
		Renewals:      it.Beat,
		LeaseMs:       it.Lease.Milliseconds(),
		HeartbeatAt:   msTime(it.HeartbeatAtMs),
		LeaseUntil:    msTime(it.LeaseUntilMs),
		ExpiresAt:     msTime(it.ExpiresAtMs),
		Released:      it.Released,
		Result:        string(it.Result),
		ResultRef:     it.ResultRef,
		ResultFence:   it.ResultFence,
		ReleasedAt:    msTime(it.ReleasedAtMs),
		RecordAccount: it.RecordAccount,
		TTL:           secTime(it.TTL),
		PrevRevision:  it.PrevRevision,
		PrevResult:    string(it.PrevResult),
		PrevReason:    it.PrevFailReason,
		Failures:      it.Failures,
		FailReason:    it.FailReason,
		NotBefore:     msTime(it.NotBeforeMs),
		FailRecent:    msTime(it.FailRecentUntilMs),
		AnswerBytes:   len(it.Answer),
	}
}

// absentView is the JSON form of an absent item.
func absentView(key lockcore.Key) view {
	return view{Verdict: verdictAbsent, Group: key.Group, ID: key.ID, PartitionKey: storeapi.PartitionKey(key)}
}

func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

func secTime(s int64) *time.Time {
	if s == 0 {
		return nil
	}
	t := time.Unix(s, 0).UTC()
	return &t
}

// summary is the one-line verdict of get and watch.
func (v view) summary(now time.Time) string {
	switch v.Verdict {
	case verdictHeld:
		return fmt.Sprintf("held by %s (fence %d, lease %s)", orDash(v.Holder), v.Fence, deadline(v.LeaseUntil, now))
	case verdictAbandoned:
		return fmt.Sprintf("abandoned by %s (fence %d, lease %s, hard maximum %s)", orDash(v.Holder), v.Fence,
			deadline(v.LeaseUntil, now), deadline(v.ExpiresAt, now))
	case verdictReleasedFailed:
		s := fmt.Sprintf("%s (fence %d, released %s, %d failed attempts, reason %s", v.Verdict, v.Fence,
			since(v.ReleasedAt, now), v.Failures, orDash(v.FailReason))
		if v.NotBefore != nil && v.NotBefore.After(now) {
			s += ", no take-over " + deadline(v.NotBefore, now)
		}
		return s + ")"
	default:
		return fmt.Sprintf("%s (fence %d, released %s)", v.Verdict, v.Fence, since(v.ReleasedAt, now))
	}
}

// writeDetail writes the decoded item, one field a line.
func (v view) writeDetail(w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, val string) { fmt.Fprintf(tw, "%s\t%s\n", k, val) }
	row("verdict:", v.summary(now))
	row("group:", v.Group)
	row("id:", v.ID)
	row("partition key:", v.PartitionKey)
	row("holder:", orDash(v.Holder))
	row("revision:", v.Revision)
	row("fence:", fmt.Sprint(v.Fence))
	row("renewals:", fmt.Sprint(v.Renewals))
	row("lease:", (time.Duration(v.LeaseMs) * time.Millisecond).String())
	row("heartbeat:", stamp(v.HeartbeatAt, since(v.HeartbeatAt, now)))
	row("lease until:", stamp(v.LeaseUntil, deadline(v.LeaseUntil, now)))
	row("hard maximum:", stamp(v.ExpiresAt, deadline(v.ExpiresAt, now)))
	row("released:", fmt.Sprint(v.Released))
	if v.Released {
		row("released at:", stamp(v.ReleasedAt, since(v.ReleasedAt, now)))
		row("result:", orDash(v.Result))
		row("result ref:", orDash(v.ResultRef))
		row("result fence:", fmt.Sprint(v.ResultFence))
	}
	if v.Failures > 0 || v.FailReason != "" {
		row("failed attempts:", fmt.Sprint(v.Failures))
		row("failure reason:", orDash(v.FailReason))
		row("not before:", stamp(v.NotBefore, deadline(v.NotBefore, now)))
		row("failure recent until:", stamp(v.FailRecent, deadline(v.FailRecent, now)))
	}
	if v.PrevRevision != "" {
		prev := fmt.Sprintf("revision %s, result %s", v.PrevRevision, orDash(v.PrevResult))
		if v.PrevReason != "" {
			prev += ", reason " + v.PrevReason
		}
		row("previous holder:", prev)
	}
	if v.AnswerBytes > 0 {
		row("answer:", fmt.Sprintf("%d bytes", v.AnswerBytes))
	}
	row("record account:", orDash(v.RecordAccount))
	if v.TTL != nil {
		row("ttl (clean-up):", stamp(v.TTL, deadline(v.TTL, now)))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t *time.Time, rel string) string {
	if t == nil {
		return "-"
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00") + " (" + rel + ")"
}

// deadline says how far t lies ahead, "in 3.2 s", or behind, "lapsed 10 s
// ago".
func deadline(t *time.Time, now time.Time) string {
	if t == nil {
		return "not set"
	}
	d := t.Sub(now)
	if d >= 0 {
		return "in " + human(d)
	}
	return "lapsed " + human(-d) + " ago"
}

// since says how long ago t was: "1.5 s ago".
func since(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	d := now.Sub(*t)
	if d < 0 {
		return "in " + human(-d) + " by this clock"
	}
	return human(d) + " ago"
}

// human writes d with a precision that suits its size.
func human(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s < 10:
		return fmt.Sprintf("%.1f s", math.Floor(s*10)/10)
	case s < 120:
		return fmt.Sprintf("%d s", int64(s))
	case s < 2*3600:
		return fmt.Sprintf("%d min", int64(s/60))
	case s < 2*86400:
		return fmt.Sprintf("%.1f h", s/3600)
	default:
		return fmt.Sprintf("%d days", int64(s/86400))
	}
}

// oneLine shortens s to n runes for a table cell.
func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
