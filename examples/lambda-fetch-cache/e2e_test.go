package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/sandbox"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// burstSize is N, the concurrent invocations of one burst.
const burstSize = 8

// TestEndToEnd runs the real bootstrap under the Lambda Runtime Interface
// Emulator, one emulator process per sandbox, against Dynoxide and a
// rate-limited counting upstream, all on loopback, in both answer modes.
func TestEndToEnd(t *testing.T) {
	stack := newEmulatorStack(t)
	start, db := stack.start, stack.db

	// Each burst runs in both answer modes: the cache table, and inline
	// answers in the lock item.
	for _, mode := range []string{fetchcache.AnswerCache, fetchcache.AnswerInline} {
		t.Run("answers="+mode, func(t *testing.T) {
			t.Run("one key: one upstream call per burst, then again after expiry", func(t *testing.T) {
				const ttl = 4 * time.Second
				r := start(t, localrun.Options{N: burstSize, CacheTTL: ttl, AnswerMode: mode})

				first := decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("EUR-USD", burstSize)...)))
				if got := r.Upstream.Requests(); got != 1 {
					t.Fatalf("upstream requests after the first burst = %d, want 1", got)
				}
				checkOneFetch(t, mode, first, 1)
				checkEMF(t, r.Pool.Lines(), map[string]float64{
					"LockAcquisitionSuccess": acquiredDocs(mode, first, 1),
					"LockNotReleased":        0,
					"LockAcquisitionFailed":  0,
				})

				// While fresh, a burst reads the cache without locking, or, with
				// inline answers, gets the first answer from the lock item.
				fresh := decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("EUR-USD", burstSize)...)))
				for _, resp := range fresh {
					checkFresh(t, mode, resp, first[0])
				}
				if got := r.Upstream.Requests(); got != 1 {
					t.Fatalf("upstream requests after a burst while fresh = %d, want 1", got)
				}

				// Wait out the freshness the first fetch was given, in the cache
				// and in the lock (WithFreshSuccess counts from the release,
				// after the fetch): a known instant on the wall clock, not a
				// synchronisation.
				freshFrom := max(first[0].FetchedAtMs, releasedAtMs(t, db.Endpoint(), r.LockTable, "EUR-USD"))
				time.Sleep(time.Until(time.UnixMilli(freshFrom).Add(ttl + 50*time.Millisecond)))
				second := decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("EUR-USD", burstSize)...)))
				if got := r.Upstream.Requests(); got != 2 {
					t.Fatalf("upstream requests after the burst past expiry = %d, want 2", got)
				}
				checkOneFetch(t, mode, second, 2)
				if second[0].Fence <= first[0].Fence {
					t.Errorf("fence after expiry = %d, want above the first burst's %d", second[0].Fence, first[0].Fence)
				}
				checkEMF(t, r.Pool.Lines(), map[string]float64{"LockAcquisitionSuccess": acquiredDocs(mode, first, 1) + acquiredDocs(mode, second, 1)})
			})

			t.Run("a holder that outlives its timeout: one take-over, no empty answer", func(t *testing.T) {
				r := start(t, localrun.Options{N: burstSize, AnswerMode: mode})
				// Warm the burst's sandboxes on another key, so that their cold
				// starts do not outlast the holder.
				decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("WARM-UP", burstSize)...)))
				warm := r.Upstream.Requests()
				linesBefore := len(r.Pool.Lines())
				holderPool, err := r.StartPool(t.Context(), 1, 4*time.Second) // lock held until the deadline minus the 2s margin
				if err != nil {
					t.Fatal(err)
				}
				arrived := r.Upstream.StallNext(10 * time.Second) // slower than the 4s timeout
				holderDone := make(chan sandbox.Invocation, 1)
				go func() {
					holderDone <- holderPool.Sandboxes[0].Invoke(burstContext(t), localrun.Payloads("EUR-USD")[0])
				}()
				select {
				case <-arrived:
				case <-time.After(15 * time.Second):
					t.Fatal("the holder never called the upstream")
				}
				invs := r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("EUR-USD", burstSize)...))
				holder := <-holderDone

				if holder.Err != nil || !holder.FunctionError {
					t.Errorf("holder: err %v, function error %t, body %s; want a function error, not an answer", holder.Err, holder.FunctionError, holder.Body)
				}
				if len(bytes.TrimSpace(holder.Body)) == 0 {
					t.Errorf("holder returned an empty body")
				}
				resps := decodeAll(t, invs)
				var takeovers int
				for _, resp := range resps {
					if resp.TookOver {
						takeovers++
						if resp.Outcome != "ACQUIRED" || resp.Source != fetchcache.SourceUpstream {
							t.Errorf("take-over answer %+v, want ACQUIRED from upstream", resp)
						}
					}
				}
				// With inline answers every waiter returns the take-over's answer.
				if want := map[string]int{fetchcache.AnswerCache: 1, fetchcache.AnswerInline: len(resps)}[mode]; takeovers != want {
					t.Errorf("answers with a take-over = %d, want %d", takeovers, want)
				}
				if got := r.Upstream.Requests() - warm; got != 2 {
					t.Errorf("upstream requests = %d, want 2 (the stalled holder and the take-over)", got)
				}
				checkSameData(t, resps)
				checkEMF(t, r.Pool.Lines()[linesBefore:], map[string]float64{"LockTakeover": 1, "LockAcquisitionSuccess": acquiredDocs(mode, resps, 0)})
			})

			t.Run("distinct keys: one upstream call per key", func(t *testing.T) {
				r := start(t, localrun.Options{N: burstSize, AnswerMode: mode})
				keys := []string{"EUR-USD", "GBP-USD", "USD-JPY", "EUR-CHF"}
				var pairs []string
				for i := range burstSize {
					pairs = append(pairs, keys[i%len(keys)])
				}
				resps := decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(pairs...)))
				byKey := map[string][]fetchcache.Response{}
				for _, resp := range resps {
					byKey[resp.Pair] = append(byKey[resp.Pair], resp)
				}
				for _, k := range keys {
					if got := r.Upstream.RequestsFor(k); got != 1 {
						t.Errorf("upstream requests for %s = %d, want 1", k, got)
					}
					checkSameData(t, byKey[k])
				}
				if got := r.Upstream.Requests(); got != len(keys) {
					t.Errorf("upstream requests = %d, want %d", got, len(keys))
				}
				checkEMF(t, r.Pool.Lines(), map[string]float64{"LockAcquisitionSuccess": acquiredDocs(mode, resps, float64(len(keys)))})
			})
		})
	}

	t.Run("a missing setting stops init with a message", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), stack.boot)
		cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=127.0.0.1:9", fetchcache.EnvCacheTable + "=cache"}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("bootstrap without LOCK_TABLE: %v, want exit status 1", err)
		}
		for _, want := range []string{"lambda-fetch-cache: init:", fetchcache.EnvLockTable + " is required", fetchcache.EnvUpstreamURL + " is required"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("bootstrap output %q, want it to contain %q", out, want)
			}
		}
		if strings.Contains(string(out), "panic") {
			t.Errorf("bootstrap output %q contains a panic", out)
		}
	})

	// The table the function writes really has the lock key schema of the
	// store: a sanity check of localrun, not of the function.
	t.Run("lock table schema", func(t *testing.T) {
		r := start(t, localrun.Options{N: 1})
		out, err := dynalite.NewClient(db.Endpoint()).DescribeTable(t.Context(), describe(r.LockTable))
		if err != nil {
			t.Fatal(err)
		}
		if k := out.Table.KeySchema; len(k) != 1 || *k[0].AttributeName != storeapi.AttrLockKey {
			t.Errorf("lock table key schema = %v, want %s", k, storeapi.AttrLockKey)
		}
	})
}

// releasedAtMs reads when the lock on pair was last released.
func releasedAtMs(t *testing.T, endpoint, table, pair string) int64 {
	t.Helper()
	store, err := lockcore.NewDynamoStore(dynalite.NewClient(endpoint), table)
	if err != nil {
		t.Fatal(err)
	}
	it, found, err := store.Get(t.Context(), lockcore.Key{Group: "fetch-cache", ID: pair})
	if err != nil || !found || !it.Released {
		t.Fatalf("lock item of %s: found %v, %+v, %v; want a released item", pair, found, it, err)
	}
	return it.ReleasedAtMs
}

func burstContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// decodeAll decodes every answer, failing the test on an error or an empty
// answer.
func decodeAll(t *testing.T, invs []sandbox.Invocation) []fetchcache.Response {
	t.Helper()
	out := make([]fetchcache.Response, 0, len(invs))
	for _, inv := range invs {
		r, err := localrun.Decode(inv)
		if err != nil {
			t.Fatalf("invocation %d: %v", inv.Sandbox, err)
		}
		out = append(out, r)
	}
	return out
}

// checkOneFetch checks a burst on one key: one invocation fetched from the
// upstream (the seq-th upstream request), all answers carry its data and
// fence, and the others came from the cache, or, with inline answers, are
// the fetcher's answer.
func checkOneFetch(t *testing.T, mode string, resps []fetchcache.Response, seq int) {
	t.Helper()
	if mode == fetchcache.AnswerInline {
		checkIdentical(t, resps)
		checkSeq(t, resps[0], seq)
		return
	}
	var fromUpstream, fromCache int
	for _, r := range resps {
		switch r.Source {
		case fetchcache.SourceUpstream:
			fromUpstream++
			if r.Outcome != "ACQUIRED" {
				t.Errorf("upstream answer with outcome %s, want ACQUIRED", r.Outcome)
			}
		case fetchcache.SourceCache:
			fromCache++
		}
	}
	if fromUpstream != 1 || fromCache != len(resps)-1 {
		t.Errorf("answers from upstream %d, from cache %d; want 1 and %d", fromUpstream, fromCache, len(resps)-1)
	}
	checkSameData(t, resps)
	checkSeq(t, resps[0], seq)
}

// checkSeq checks that r carries the seq-th upstream answer.
func checkSeq(t *testing.T, r fetchcache.Response, seq int) {
	t.Helper()
	var q sandbox.Quote
	if err := json.Unmarshal(r.Data, &q); err != nil || q.Seq != seq {
		t.Errorf("data %s: seq %d (%v), want upstream request %d", r.Data, q.Seq, err, seq)
	}
}

// checkIdentical checks that every answer of an inline burst is the
// holder's, byte for byte as the caller sees it: ACQUIRED, from the
// upstream.
func checkIdentical(t *testing.T, resps []fetchcache.Response) {
	t.Helper()
	first, _ := json.Marshal(resps[0])
	for _, r := range resps {
		if b, _ := json.Marshal(r); !bytes.Equal(b, first) {
			t.Errorf("answer %s differs from %s", b, first)
		}
	}
	if resps[0].Outcome != "ACQUIRED" || resps[0].Source != fetchcache.SourceUpstream {
		t.Errorf("inline answer %+v, want the holder's: ACQUIRED, from upstream", resps[0])
	}
}

// checkFresh checks an answer while the first one is fresh: from the cache
// without the lock (outcome NONE), or the first answer itself from the lock
// item.
func checkFresh(t *testing.T, mode string, resp, first fetchcache.Response) {
	t.Helper()
	if mode == fetchcache.AnswerInline {
		checkIdentical(t, []fetchcache.Response{first, resp})
		return
	}
	if resp.Outcome != fetchcache.OutcomeNone || resp.Source != fetchcache.SourceCache || !bytes.Equal(resp.Data, first.Data) {
		t.Errorf("burst while fresh: %+v, want outcome NONE from the cache with the first data", resp)
	}
}

// acquiredDocs is the number of invocations of a burst that acquired the
// lock at the first attempt, as the metrics count them: from the answers
// in the cache mode (see acquired), and inline, where every answer is the
// holder's, the given number (late arrivals read the fresh answer).
func acquiredDocs(mode string, resps []fetchcache.Response, inline float64) float64 {
	if mode == fetchcache.AnswerInline {
		return inline
	}
	return acquired(resps, false)
}

// acquired counts the answers whose invocation acquired the lock, at the
// first attempt or by a take-over. An invocation that started late (a slow
// cold start) may acquire the released lock after the burst's holder and
// find the cache fresh: it answers from the cache, and counts here.
func acquired(resps []fetchcache.Response, tookOver bool) float64 {
	var n float64
	for _, r := range resps {
		if r.Outcome == "ACQUIRED" && r.TookOver == tookOver {
			n++
		}
	}
	return n
}

func checkSameData(t *testing.T, resps []fetchcache.Response) {
	t.Helper()
	for _, r := range resps[1:] {
		if !bytes.Equal(r.Data, resps[0].Data) || r.Fence != resps[0].Fence {
			t.Errorf("answer %s (fence %d) differs from %s (fence %d)", r.Data, r.Fence, resps[0].Data, resps[0].Fence)
		}
	}
}

// checkEMF checks that every stdout line that is not the emulator's own is a
// valid EMF document, that every invocation that locked wrote the lock
// metrics, and that the metrics in sums add up to the given totals.
func checkEMF(t *testing.T, lines []sandbox.Line, sums map[string]float64) {
	t.Helper()
	got := map[string]float64{}
	var lockDocs int
	for _, l := range lines {
		if sandbox.IsRuntimeLine(l.Text) {
			continue
		}
		doc, err := parseEMF(l.Text)
		if err != nil {
			t.Errorf("sandbox %d stdout line is not valid EMF: %v\n%s", l.Sandbox, err, l.Text)
			continue
		}
		if _, ok := doc["lockOutcome"]; ok {
			lockDocs++
			for _, name := range []string{"LockAcquisitionSuccess", "LockAcquisitionFailed", "LockAcquisitionError"} {
				if _, ok := doc[name]; !ok {
					t.Errorf("lock EMF document without %s: %s", name, l.Text)
				}
			}
		}
		for name := range sums {
			if v, ok := doc[name].(float64); ok {
				got[name] += v
			}
		}
	}
	if lockDocs == 0 {
		t.Errorf("no EMF document with lock metrics among %d lines", len(lines))
	}
	for name, want := range sums {
		if got[name] != want {
			t.Errorf("sum of %s over the EMF documents = %v, want %v", name, got[name], want)
		}
	}
}

// parseEMF checks one line against the embedded metric format
// specification: a JSON object with _aws.Timestamp, and CloudWatchMetrics
// directives whose namespace is set, whose dimension keys are top-level
// strings and whose metrics are top-level numbers (or arrays of them).
func parseEMF(line string) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		return nil, err
	}
	meta, ok := doc["_aws"].(map[string]any)
	if !ok {
		return nil, errors.New("no _aws object")
	}
	if _, ok := meta["Timestamp"].(float64); !ok {
		return nil, errors.New("_aws.Timestamp is not a number")
	}
	directives, ok := meta["CloudWatchMetrics"].([]any)
	if !ok || len(directives) == 0 {
		return nil, errors.New("_aws.CloudWatchMetrics is not a non-empty array")
	}
	for _, d := range directives {
		dir, ok := d.(map[string]any)
		if !ok {
			return nil, errors.New("a directive is not an object")
		}
		if ns, _ := dir["Namespace"].(string); ns == "" {
			return nil, errors.New("directive without Namespace")
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			return nil, errors.New("directive without Dimensions array")
		}
		for _, s := range sets {
			keys, ok := s.([]any)
			if !ok {
				return nil, errors.New("a dimension set is not an array")
			}
			for _, k := range keys {
				name, _ := k.(string)
				if _, ok := doc[name].(string); !ok {
					return nil, fmt.Errorf("dimension %q is not a top-level string", name)
				}
			}
		}
		metrics, ok := dir["Metrics"].([]any)
		if !ok || len(metrics) == 0 {
			return nil, errors.New("directive without Metrics")
		}
		for _, m := range metrics {
			def, _ := m.(map[string]any)
			name, _ := def["Name"].(string)
			switch v := doc[name].(type) {
			case float64:
			case []any:
				for _, x := range v {
					if _, ok := x.(float64); !ok {
						return nil, fmt.Errorf("metric %q has a non-number value", name)
					}
				}
			default:
				return nil, fmt.Errorf("metric %q has no top-level number value", name)
			}
		}
	}
	return doc, nil
}

func describe(table string) *dynamodb.DescribeTableInput {
	return &dynamodb.DescribeTableInput{TableName: &table}
}
