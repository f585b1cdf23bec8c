package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
)

// The parameters' AllowedPattern must allow only values the function
// accepts: a value CloudFormation lets through but the function refuses at
// init deploys a stack whose every cold start exits 1. These tests take the
// function as the oracle: every value a pattern allows, among thousands
// drawn at random around its edges, must start the function (setup, the
// whole init), and representative values the function refuses must be
// refused by the pattern.

// paramPattern returns the compiled AllowedPattern of a parameter.
func paramPattern(t *testing.T, name string) *regexp.Regexp {
	t.Helper()
	tmpl, _ := parseTemplate(t)
	p, ok := tmpl.Parameters[name]
	if !ok || p.AllowedPattern == nil {
		t.Fatalf("parameter %s has no AllowedPattern", name)
	}
	return regexp.MustCompile(*p.AllowedPattern)
}

// initEnv is a complete environment for setup, local (no tracing), with
// over on top.
func initEnv(over map[string]string) func(string) string {
	env := map[string]string{
		fetchcache.EnvLockTable: "locks", fetchcache.EnvCacheTable: "cache",
		fetchcache.EnvUpstreamURL: "https://upstream.example.com", fetchcache.EnvMetricsNamespace: "herdlock",
		fetchcache.EnvServiceName: "svc", fetchcache.EnvDynamoDBEndpoint: "http://127.0.0.1:1",
	}
	for k, v := range over {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

// initAccepts reports whether the function starts with over: the whole
// init, in both answer modes.
func initAccepts(t *testing.T, over map[string]string) error {
	t.Helper()
	for _, mode := range []string{fetchcache.AnswerCache, fetchcache.AnswerInline} {
		o := map[string]string{fetchcache.EnvAnswerMode: mode}
		for k, v := range over {
			o[k] = v
		}
		if _, err := setup(t.Context(), initEnv(o)); err != nil {
			return err
		}
	}
	return nil
}

// hermeticAWS keeps setup's AWS configuration off this machine's files.
func hermeticAWS(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// randomDuration draws a string near Go's duration syntax: 1 to 4
// components of random units in random order, numbers from 0 to past the
// int64 range, with or without a fraction, now and then a sign or a stray
// character.
func randomDuration(r *rand.Rand) string {
	units := []string{"h", "m", "s", "ms", "us", "µs", "ns", "", "d"}
	var b strings.Builder
	switch r.IntN(20) {
	case 0:
		b.WriteString("-")
	case 1:
		b.WriteString("+")
	}
	for range 1 + r.IntN(4) {
		digits := 1 + r.IntN(14)
		for i := range digits {
			if i == 0 && r.IntN(3) == 0 {
				b.WriteByte('0')
				continue
			}
			if r.IntN(4) == 0 {
				b.WriteByte('9')
			} else {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		if r.IntN(4) == 0 {
			b.WriteByte('.')
			for range 1 + r.IntN(12) {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		b.WriteString(units[r.IntN(len(units))])
		if r.IntN(30) == 0 {
			b.WriteByte(" x"[r.IntN(2)])
		}
	}
	return b.String()
}

// patternDuration draws from the pattern's own shape, digits at or near
// their bounds included: what it allows at its largest must still start.
func patternDuration(r *rand.Rand) string {
	num := func(first bool, maxDigits int) string {
		n := 1 + r.IntN(maxDigits)
		if r.IntN(3) == 0 {
			n = maxDigits
		}
		var b strings.Builder
		for i := range n {
			d := byte('0' + r.IntN(10))
			if r.IntN(2) == 0 {
				d = '9'
			}
			if i == 0 && first && d == '0' {
				d = '1'
			}
			b.WriteByte(d)
		}
		return b.String()
	}
	frac := func(maxDigits int) string {
		if r.IntN(2) == 0 {
			return ""
		}
		return "." + num(false, maxDigits)
	}
	type comp struct {
		unit      string
		digits    int
		fracLimit int
	}
	comps := []comp{{"h", 5, 9}, {"m", 7, 9}, {"s", 9, 9}, {"ms", 12, 6}}
	first := r.IntN(len(comps))
	s := num(true, comps[first].digits) + frac(comps[first].fracLimit) + comps[first].unit
	for _, c := range comps[first+1:] {
		if r.IntN(2) == 0 {
			s += num(false, c.digits) + c.unit
		}
	}
	return s
}

func TestTemplateCacheTtlPatternMatchesInit(t *testing.T) {
	hermeticAWS(t)
	re := paramPattern(t, "CacheTtl")
	tmpl, _ := parseTemplate(t)
	r := rand.New(rand.NewPCG(21, 1))
	accepted := map[string]bool{tmpl.Parameters["CacheTtl"].Default.(string): true}
	for range 200_000 {
		if v := randomDuration(r); re.MatchString(v) {
			accepted[v] = true
		}
	}
	fromNoise := len(accepted)
	for range 2_000 {
		if v := patternDuration(r); re.MatchString(v) {
			accepted[v] = true
		} else {
			t.Fatalf("patternDuration drew %q, which the pattern refuses: fix the generator", v)
		}
	}
	if fromNoise < 200 {
		t.Fatalf("only %d random values pass the pattern: the property test would prove little", fromNoise)
	}
	// LoadConfig for every value, the whole init for a sample.
	for v := range accepted {
		if _, err := fetchcache.LoadConfig(initEnv(map[string]string{fetchcache.EnvCacheTTL: v})); err != nil {
			t.Errorf("CacheTtl %q passes the pattern but the function refuses it: %v", v, err)
		}
	}
	// The largest value of each form, then a sample.
	sample := []string{"99999.999999999h9999999m999999999s999999999999ms", "9999999.999999999m999999999s999999999999ms",
		"999999999.999999999s999999999999ms", "999999999999.999999ms", "1ms"}
	for v := range accepted {
		if len(sample) == 60 {
			break
		}
		sample = append(sample, v)
	}
	for _, v := range sample {
		if !re.MatchString(v) {
			t.Errorf("CacheTtl pattern refuses %q, the largest of its form", v)
		}
		if err := initAccepts(t, map[string]string{fetchcache.EnvCacheTTL: v}); err != nil {
			t.Errorf("CacheTtl %q passes the pattern but the function does not start: %v", v, err)
		}
	}
	// What the function refuses, the pattern refuses. "" leaves CACHE_TTL
	// unset in the function (the default applies) but is no duration.
	for _, v := range []string{"0", "0s", "0m0s", "0h", "0.0s", "0.0000000001s", "0.1ns", "-5m", "5 m", "5", "five", "5d",
		"1e3s", "9999999999999999h", "2562048h", "106751991167d", "s"} {
		if _, err := fetchcache.LoadConfig(initEnv(map[string]string{fetchcache.EnvCacheTTL: v})); err == nil {
			t.Errorf("the function accepts %q: not a refused value, pick another", v)
		}
		if re.MatchString(v) {
			t.Errorf("CacheTtl pattern allows %q, which the function refuses at init", v)
		}
	}
	for _, v := range []string{"", "0.5h", ".5s"} {
		if re.MatchString(v) {
			t.Errorf("CacheTtl pattern allows %q", v)
		}
	}
	// And it allows the usual values.
	for _, v := range []string{"30s", "5m", "1h30m", "1.5h", "250ms", "24h", "1h0m0s", "1s500ms"} {
		if !re.MatchString(v) {
			t.Errorf("CacheTtl pattern refuses %q", v)
		}
	}
}

func TestTemplateUpstreamUrlPatternMatchesConfig(t *testing.T) {
	re := paramPattern(t, "UpstreamUrl")
	tmpl, _ := parseTemplate(t)
	r := rand.New(rand.NewPCG(21, 2))
	const chars = "abcXYZ019.-_~/:@!$&*+,;=%?# [](){}'\"\\"
	pick := func(n int) string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteByte(chars[r.IntN(len(chars))])
		}
		return b.String()
	}
	accepted := []string{tmpl.Parameters["UpstreamUrl"].Default.(string)}
	for range 100_000 {
		v := []string{"http://", "https://", "ftp://", "http:/", ""}[r.IntN(5)] + pick(12)
		if re.MatchString(v) {
			accepted = append(accepted, v)
		}
	}
	if len(accepted) < 200 {
		t.Fatalf("only %d random values pass the pattern: the property test would prove little", len(accepted))
	}
	for _, v := range accepted {
		if _, err := fetchcache.LoadConfig(initEnv(map[string]string{fetchcache.EnvUpstreamURL: v})); err != nil {
			t.Errorf("UpstreamUrl %q passes the pattern but the function refuses it: %v", v, err)
		}
	}
	for _, v := range []string{"http://", "https://", "http:///rates", "http://@/x", "http://a/%zz", "ftp://host", "host/rates", "http://a b"} {
		if _, err := fetchcache.LoadConfig(initEnv(map[string]string{fetchcache.EnvUpstreamURL: v})); err == nil {
			t.Errorf("the function accepts %q: not a refused value, pick another", v)
		}
		if re.MatchString(v) {
			t.Errorf("UpstreamUrl pattern allows %q, which the function refuses", v)
		}
	}
	for _, v := range []string{"https://api.example.com", "http://localhost:8080/v1/rates", "https://httpbin.org/anything"} {
		if !re.MatchString(v) {
			t.Errorf("UpstreamUrl pattern refuses %q", v)
		}
	}
}

// ReservedConcurrency is -1 (reserve none, the default) or at least 1;
// Lambda takes 0 as "never run", which no one deploys on purpose.
func TestTemplateReservedConcurrencyPattern(t *testing.T) {
	re := paramPattern(t, "ReservedConcurrency")
	tmpl, _ := parseTemplate(t)
	if d := tmpl.Parameters["ReservedConcurrency"].Default; d != "-1" {
		t.Errorf("ReservedConcurrency default = %v, want -1 (none)", d)
	}
	r := rand.New(rand.NewPCG(21, 3))
	n := 0
	for range 100_000 {
		var v string
		switch r.IntN(3) {
		case 0:
			v = strconv.Itoa(r.IntN(2_000_000) - 1_000)
		case 1:
			v = strconv.Itoa(r.IntN(5) - 2)
		default:
			v = strings.Repeat("0", r.IntN(2)) + strconv.Itoa(r.IntN(100)) + []string{"", ".5", " ", "e2"}[r.IntN(4)]
		}
		if !re.MatchString(v) {
			continue
		}
		n++
		c, err := strconv.Atoi(v)
		if err != nil || (c != -1 && c < 1) || strconv.Itoa(c) != v {
			t.Errorf("ReservedConcurrency pattern allows %q: want -1 or a whole number from 1", v)
		}
	}
	if n < 1000 {
		t.Fatalf("only %d random values pass the pattern", n)
	}
	for _, v := range []string{"0", "-2", "", "01", "1.5", "abc", "-0"} {
		if re.MatchString(v) {
			t.Errorf("ReservedConcurrency pattern allows %q", v)
		}
	}
	for _, v := range []string{"-1", "1", "100", "1000"} {
		if !re.MatchString(v) {
			t.Errorf("ReservedConcurrency pattern refuses %q", v)
		}
	}
}

// The architecture is set once, in the template; `make
// build-FetchFunction` builds for it. A copy of the template with the
// other architecture must change what make builds.
func TestTemplateArchitectureBuiltByMakefile(t *testing.T) {
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	arch := regexp.MustCompile(`(?m)^\s*Architectures:\s*\[\s*(\w+)\s*\]`)
	all := arch.FindAllSubmatch(raw, -1)
	if len(all) == 0 {
		t.Fatal("template.yaml has no Architectures in the flow form the Makefile reads")
	}
	for _, m := range all {
		if string(m[1]) != string(all[0][1]) {
			t.Errorf("template.yaml sets Architectures %s and %s: the Makefile builds one", all[0][1], m[1])
		}
	}
	goarch := map[string]string{"arm64": "arm64", "x86_64": "amd64"}
	makeGOARCH := func(template string) string {
		t.Helper()
		args := []string{"-s", "-n", "-C", "../..", "build-FetchFunction", "ARTIFACTS_DIR=/nonexistent"}
		if template != "" {
			args = append(args, "LAMBDA_TEMPLATE="+template)
		}
		out, err := exec.Command("make", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		m := regexp.MustCompile(`GOARCH=(\S+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("make -n build-FetchFunction sets no GOARCH:\n%s", out)
		}
		return string(m[1])
	}
	if got, want := makeGOARCH(""), goarch[string(all[0][1])]; got != want {
		t.Errorf("make build-FetchFunction builds GOARCH=%s, template.yaml says %s (GOARCH %s)", got, all[0][1], want)
	}
	for from, to := range map[string]string{"arm64": "x86_64", "x86_64": "arm64"} {
		if string(all[0][1]) != from {
			continue
		}
		other := filepath.Join(t.TempDir(), "template.yaml")
		if err := os.WriteFile(other, arch.ReplaceAll(raw, []byte("      Architectures: ["+to+"]")), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := makeGOARCH(other); got != goarch[to] {
			t.Errorf("with Architectures [%s] make builds GOARCH=%s, want %s", to, got, goarch[to])
		}
	}
}
