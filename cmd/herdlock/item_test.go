package main

import (
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

func TestVerdict(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	tests := []struct {
		name string
		it   storeapi.Item
		want string
	}{
		{"lease and hard maximum ahead", storeapi.Item{LeaseUntilMs: 1_000_001, ExpiresAtMs: 1_000_001}, verdictHeld},
		{"lease lapsed", storeapi.Item{LeaseUntilMs: 999_999, ExpiresAtMs: 2_000_000}, verdictAbandoned},
		{"hard maximum lapsed", storeapi.Item{LeaseUntilMs: 2_000_000, ExpiresAtMs: 999_999}, verdictAbandoned},
		{"released with success, lease lapsed", storeapi.Item{Released: true, Result: lockcore.Success}, verdictReleasedOK},
		{"released with failure", storeapi.Item{Released: true, Result: lockcore.Failure, LeaseUntilMs: 2_000_000, ExpiresAtMs: 2_000_000}, verdictReleasedFailed},
	}
	for _, tt := range tests {
		if got := verdict(tt.it, now); got != tt.want {
			t.Errorf("verdict(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	tests := []struct {
		t    *time.Time
		want string
	}{
		{at(3250 * time.Millisecond), "in 3.2 s"},
		{at(-10 * time.Second), "lapsed 10 s ago"},
		{at(90 * time.Second), "in 90 s"},
		{at(-5 * time.Minute), "lapsed 5 min ago"},
		{at(3 * time.Hour), "in 3.0 h"},
		{at(7 * 24 * time.Hour), "in 7 days"},
		{nil, "not set"},
	}
	for _, tt := range tests {
		if got := deadline(tt.t, now); got != tt.want {
			t.Errorf("deadline(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	c, _ := lookup("release")
	fs := newFlagSet(c)
	c.flags(fs)
	pos, err := parseInterspersed(fs, []string{"g", "--revision", "r", "i", "--", "--yes"})
	if err != nil || len(pos) != 3 || pos[2] != "--yes" || fs.Lookup("revision").Value.String() != "r" || fs.Lookup("yes").Value.String() != "false" {
		t.Errorf("parseInterspersed() = %q, %v; revision %v, yes %v; want [g i --yes], revision r, yes false",
			pos, err, fs.Lookup("revision").Value, fs.Lookup("yes").Value)
	}
}

func TestPrintCFN(t *testing.T) {
	var b strings.Builder
	if err := writeCFN(&b, "locks", true, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Type: AWS::DynamoDB::Table", "DeletionPolicy: Retain", "UpdateReplacePolicy: Retain", "TableName: locks",
		"BillingMode: PAY_PER_REQUEST", "- AttributeName: " + storeapi.AttrLockKey + "\n          AttributeType: S",
		"- AttributeName: " + storeapi.AttrLockKey + "\n          KeyType: HASH", "AttributeName: " + storeapi.AttrTTL + "\n        Enabled: true",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("--print-cfn lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := writeCFN(&b, "locks", false, false); err != nil || strings.Contains(b.String(), "TimeToLiveSpecification") {
		t.Errorf("--print-cfn --ttl=false = %v:\n%s; want no TTL", err, b.String())
	}
}
