package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// The idempotency figure: bursts of duplicates of one operation, through
// herdlock's idempotency (a duplicate waits for the first answer) and
// through a Powertools-style layer (a duplicate raises
// IdempotencyAlreadyInProgressError and its client retries), on the
// simulated DynamoDB of [HotEnv] (the capacity model at DynamoDB's
// per-item limits in front of minidyn, in virtual time).
const (
	// SideIdempotency is herdlock's middleware/idempotency.
	SideIdempotency = "herdlock idempotency"
	// SidePowertools is the Powertools-style layer ([powertoolsLayer]).
	SidePowertools = "Powertools-style (raises)"

	// SourceHTTP is a burst of client requests, each client retrying.
	SourceHTTP = "HTTP burst"
	// SourceHTTPSlow is SourceHTTP with an upstream call of
	// IdempotencySlowWork, longer than a client's first backoffs.
	SourceHTTPSlow = "HTTP burst, slow call"
	// SourceSQS is a message delivered to several invocations at once,
	// a failed delivery redelivered after the visibility timeout.
	SourceSQS = "SQS redelivery"

	// IdempotencyWork is how long the operation's upstream call takes.
	IdempotencyWork = HerdWork
	// IdempotencySlowWork is the upstream call of SourceHTTPSlow.
	IdempotencySlowWork = 3 * time.Second
	// IdempotencyTimeout is each invocation's timeout (its deadline).
	IdempotencyTimeout = 10 * time.Second
	// IdempotencyArrival spreads a burst's first arrivals.
	IdempotencyArrival = 20 * time.Millisecond
	// ClientMaxAttempts is how many times a client sends its request,
	// the first included: the AWS SDKs' standard retry mode's default
	// (AWS SDKs and Tools Reference Guide, "Retry behavior").
	ClientMaxAttempts = 3
	// ClientMaxBackoff caps a client's backoff: the standard mode's 20 s.
	ClientMaxBackoff = 20 * time.Second
	// SQSVisibilityTimeout is when a failed delivery is received again:
	// SQS's default visibility timeout.
	SQSVisibilityTimeout = 30 * time.Second
	// SQSMaxReceiveCount is the redrive policy's maxReceiveCount: after
	// that many receives a message that still fails goes to the
	// dead-letter queue.
	SQSMaxReceiveCount = 5

	// powertoolsTable is the Powertools-style layer's table: partition
	// key "id", Powertools' default.
	powertoolsTable = "IdempotencyTable"
	// idempotencyPartition is herdlock's records' partition.
	idempotencyPartition = "bench-idempotency"
)

// IdempotencyResult is one row of the idempotency figure: N duplicates of
// one operation on one side.
type IdempotencyResult struct {
	Side   string `json:"side"`
	Source string `json:"source"`
	N      int    `json:"n"`
	// UpstreamCalls is how often the operation ran (want 1).
	UpstreamCalls int `json:"upstreamCalls"`
	// Errors is what the callers saw fail for good: HTTP clients whose
	// last attempt failed, SQS copies that went to the dead-letter queue
	// (want 0).
	Errors int `json:"errors"`
	// Raised is the in-progress refusals: Powertools'
	// IdempotencyAlreadyInProgressError, herdlock's ErrInProgress; each
	// one a client retry or an SQS redelivery.
	Raised int `json:"raised"`
	// Invocations is every invocation the burst took, retries included.
	Invocations int `json:"invocations"`
	// AllAnsweredMs is the time from the first arrival until every
	// duplicate had its final answer.
	AllAnsweredMs float64 `json:"allAnsweredMs"`
	// Requests, Throttled, WCU and RCU are the DynamoDB requests of the
	// burst (writes and GetItem, every item) and the capacity they
	// consumed.
	Requests  int     `json:"requests"`
	Throttled int     `json:"throttled"`
	WCU       float64 `json:"wcu"`
	RCU       float64 `json:"rcu"`
	// Answers is the number of distinct answers the successful callers
	// got (want 1).
	Answers int `json:"answers"`
}

// errPowertoolsInProgress is Powertools' IdempotencyAlreadyInProgressError.
var errPowertoolsInProgress = errors.New("IdempotencyAlreadyInProgressError")

// errPowertoolsInconsistent is Powertools' IdempotencyInconsistentStateError.
var errPowertoolsInconsistent = errors.New("IdempotencyInconsistentStateError")

// powertoolsLayer is the idempotency every Powertools runtime has,
// written after Powertools for AWS Lambda (Python)'s
// DynamoDBPersistenceLayer and BasePersistenceLayer, with the default
// attribute names (id, expiration, in_progress_expiration, status, data,
// validation):
//
//   - PutItem of an INPROGRESS record (expiration now + expires_after in
//     seconds, in_progress_expiration the invocation's deadline in
//     milliseconds) on the condition attribute_not_exists(#id) OR
//     #expiry < :now OR (#status = :inprogress AND
//     attribute_exists(#in_progress_expiry) AND #in_progress_expiry <
//     :now_in_millis), ReturnValuesOnConditionCheckFailure ALL_OLD;
//   - refused: the old item (a consistent GetItem when the refusal
//     carried none): COMPLETED is replayed after the payload check,
//     INPROGRESS raises IdempotencyAlreadyInProgressError (or
//     IdempotencyInconsistentStateError when its in-progress expiry is
//     past);
//   - the handler's success: an unconditional UpdateItem to COMPLETED
//     with the answer; its error: an unconditional DeleteItem.
type powertoolsLayer struct {
	client       *dynamodb.Client
	expiresAfter time.Duration
}

func (p *powertoolsLayer) invoke(ctx context.Context, key string, payload []byte, handle func(context.Context) (string, error)) (string, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return "", errors.New("bench: powertools layer: no deadline")
	}
	now := time.Now()
	sum := sha256.Sum256(payload)
	hash := hex.EncodeToString(sum[:])
	num := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := p.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(powertoolsTable),
		Item: map[string]types.AttributeValue{
			"id": str(key), "expiration": num(now.Add(p.expiresAfter).Unix()), "status": str("INPROGRESS"),
			"in_progress_expiration": num(deadline.UnixMilli()), "validation": str(hash),
		},
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #expiry < :now OR " +
			"(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"),
		ExpressionAttributeNames: map[string]string{"#id": "id", "#expiry": "expiration", "#status": "status",
			"#in_progress_expiry": "in_progress_expiration"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now.Unix()), ":inprogress": str("INPROGRESS"),
			":now_in_millis": num(now.UnixMilli())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		old := ccf.Item
		if old == nil {
			got, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(powertoolsTable),
				Key: map[string]types.AttributeValue{"id": str(key)}, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return "", err
			}
			old = got.Item
		}
		return p.handleForStatus(old, hash, time.Now())
	case err != nil:
		return "", err
	}
	answer, herr := handle(ctx)
	if herr != nil {
		if _, err := p.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(powertoolsTable),
			Key: map[string]types.AttributeValue{"id": str(key)}}); err != nil {
			return "", errors.Join(herr, err)
		}
		return "", herr
	}
	_, err = p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(powertoolsTable),
		Key:              map[string]types.AttributeValue{"id": str(key)},
		UpdateExpression: aws.String("SET #response_data = :response_data, #expiry = :expiry, #status = :status"),
		ExpressionAttributeNames: map[string]string{"#response_data": "data", "#expiry": "expiration",
			"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":response_data": str(answer),
			":expiry": num(time.Now().Add(p.expiresAfter).Unix()), ":status": str("COMPLETED")},
	})
	return answer, err
}

// handleForStatus is Powertools' _handle_for_status on the old item.
func (p *powertoolsLayer) handleForStatus(old map[string]types.AttributeValue, hash string, now time.Time) (string, error) {
	s := func(k string) string {
		if v, ok := old[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	n := func(k string) int64 {
		if v, ok := old[k].(*types.AttributeValueMemberN); ok {
			x, _ := strconv.ParseInt(v.Value, 10, 64)
			return x
		}
		return 0
	}
	if old == nil || n("expiration") < now.Unix() {
		return "", errPowertoolsInconsistent // expired: the put should have succeeded
	}
	if s("status") == "INPROGRESS" {
		if _, ok := old["in_progress_expiration"]; ok && n("in_progress_expiration") < now.UnixMilli() {
			return "", errPowertoolsInconsistent
		}
		return "", errPowertoolsInProgress
	}
	if s("validation") != hash {
		return "", errors.New("IdempotencyValidationError")
	}
	return s("data"), nil
}

// createPowertoolsTable creates the Powertools-style layer's table.
func createPowertoolsTable(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(powertoolsTable),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	return err
}

// idemOrder is the operation's event: a payment of an order.
type idemOrder struct {
	OrderID string `json:"orderId"`
	Amount  int    `json:"amount"`
}

// duplicateBurst is what one row runs: n duplicates, each a caller that
// tries until it has an answer or gives up.
type duplicateBurst struct {
	env      *HotEnv
	n        int
	source   string
	upstream atomic.Int64
	raised   atomic.Int64
	invoked  atomic.Int64
}

// work is the operation: one upstream call.
func (b *duplicateBurst) work(ctx context.Context) (string, error) {
	seq := b.upstream.Add(1)
	work := IdempotencyWork
	if b.source == SourceHTTPSlow {
		work = IdempotencySlowWork
	}
	if err := sleepCtx(ctx, work); err != nil {
		return "", err
	}
	return fmt.Sprintf(`{"receipt":"r-%d"}`, seq), nil
}

// RunIdempotency runs one row: n duplicates from source on side, in a
// fresh env. Run it inside a synctest bubble.
func RunIdempotency(ctx context.Context, side, source string, n int) (IdempotencyResult, error) {
	env, err := StartHotEnv(ctx, capacity.Config{})
	if err != nil {
		return IdempotencyResult{}, err
	}
	if err := createPowertoolsTable(ctx, env.NewClient()); err != nil {
		return IdempotencyResult{}, err
	}
	b := &duplicateBurst{env: env, n: n, source: source}
	// Each caller's invocation function: one invocation of its own
	// execution environment (an SDK client and the handler built on it).
	invokers := make([]func(context.Context) (string, error), n)
	for i := range invokers {
		if invokers[i], err = b.invoker(side); err != nil {
			return IdempotencyResult{}, err
		}
	}
	before := totalStats(env.Proxy)
	start := time.Now()
	var (
		mu      sync.Mutex
		answers = map[string]int{}
		errs    int
		last    time.Time
		wg      sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			_ = sleepCtx(ctx, rand.N(IdempotencyArrival))
			answer, ok := b.caller(ctx, invokers[i])
			mu.Lock()
			defer mu.Unlock()
			if ok {
				answers[answer]++
			} else {
				errs++
			}
			last = maxTime(last, time.Now())
		})
	}
	wg.Wait()
	st := statsSince(totalStats(env.Proxy), before)
	r := IdempotencyResult{Side: side, Source: source, N: n, UpstreamCalls: int(b.upstream.Load()), Errors: errs,
		Raised: int(b.raised.Load()), Invocations: int(b.invoked.Load()), AllAnsweredMs: ms(last.Sub(start)),
		WCU: st.WriteUnits, RCU: st.ReadUnits, Answers: len(answers)}
	for _, o := range st.Ops {
		r.Requests += o.Requests
		r.Throttled += o.Throttled
	}
	return r, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// caller is one duplicate's caller until it has an answer or gives up:
// an HTTP client that retries a failed request with the AWS SDKs'
// standard backoff (full jitter, [0, 1 s) * 2^attempt, capped at
// ClientMaxBackoff: the SDK's own retry.ExponentialJitterBackoff) up to
// ClientMaxAttempts; or SQS, which receives a failed message again after
// the visibility timeout, up to SQSMaxReceiveCount receives.
func (b *duplicateBurst) caller(ctx context.Context, invoke func(context.Context) (string, error)) (string, bool) {
	backoff := retry.NewExponentialJitterBackoff(ClientMaxBackoff)
	attempts, wait := ClientMaxAttempts, func(attempt int) time.Duration {
		d, _ := backoff.BackoffDelay(attempt, nil)
		return d
	}
	if b.source == SourceSQS {
		attempts, wait = SQSMaxReceiveCount, func(int) time.Duration { return SQSVisibilityTimeout }
	}
	for attempt := 1; ; attempt++ {
		b.invoked.Add(1)
		ictx, cancel := context.WithTimeout(lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
			AwsRequestID:       fmt.Sprintf("req-%d", b.invoked.Load()),
			InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:bench-idempotency",
		}), IdempotencyTimeout)
		answer, err := invoke(ictx)
		cancel()
		if err == nil {
			return answer, true
		}
		if errors.Is(err, errPowertoolsInProgress) || errors.Is(err, idempotency.ErrInProgress) {
			b.raised.Add(1)
		}
		if attempt == attempts {
			return "", false
		}
		if sleepCtx(ctx, wait(attempt)) != nil {
			return "", false
		}
	}
}

// invoker builds one execution environment of side and returns its
// invocation.
func (b *duplicateBurst) invoker(side string) (func(context.Context) (string, error), error) {
	order := idemOrder{OrderID: "order-1", Amount: 42}
	client := b.env.NewClient()
	if side == SidePowertools {
		p := &powertoolsLayer{client: client, expiresAfter: idempotency.DefaultExpiresAfter}
		payload, _ := json.Marshal(order)
		key := "orders#" + order.OrderID
		if b.source == SourceSQS {
			key = "refresh#msg-1"
		}
		return func(ctx context.Context) (string, error) { return p.invoke(ctx, key, payload, b.work) }, nil
	}
	store, err := lockcore.NewDynamoStore(client, LockTable)
	if err != nil {
		return nil, err
	}
	quiet := idempotency.WithLockmw(lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}))
	if b.source == SourceSQS {
		records, err := idempotency.SQSHandler(func(ctx context.Context, _ events.SQSMessage) error {
			_, err := b.work(ctx)
			return err
		}, store, idempotency.MessageID, idempotency.WithKeyPrefix("refresh"), idempotency.WithPartition(idempotencyPartition), quiet)
		if err != nil {
			return nil, err
		}
		h := sqsmw.Wrap(records, store, idempotency.MessageID, sqsmw.WithLockmw(lockmw.WithLockGroup(idempotencyPartition+"-sqs"),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard})))
		body, _ := json.Marshal(order)
		ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "msg-1", Body: string(body), EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders"}}}
		return func(ctx context.Context) (string, error) {
			resp, err := h(ctx, ev)
			if err != nil {
				return "", err
			}
			if len(resp.BatchItemFailures) > 0 {
				return "", errors.New("bench: the record failed")
			}
			return "done", nil
		}, nil
	}
	op, err := idempotency.New(idempotency.Handlers[idemOrder, string]{
		Handle:  func(ctx context.Context, _ idemOrder) (string, error) { return b.work(ctx) },
		Key:     func(_ context.Context, o idemOrder) (string, error) { return o.OrderID, nil },
		Payload: func(o idemOrder) any { return o },
	}, store, idempotency.WithKeyPrefix("orders"), idempotency.WithPartition(idempotencyPartition), quiet)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (string, error) { return op(ctx, order) }, nil
}

// totalStats sums the proxy's counts over every item.
func totalStats(p *capacity.Proxy) capacity.ItemStats {
	var sum capacity.ItemStats
	for _, s := range p.Stats() {
		sum = addStats(sum, s, 1)
	}
	return sum
}

// IdempotencySizes are the burst sizes of the figure.
var IdempotencySizes = []int{2, 10, 100}

// RunIdempotencyRows runs every row of the figure for sizes: both sides,
// HTTP bursts (with the usual and a slow upstream call) and SQS
// redeliveries. Run it inside a synctest bubble.
func RunIdempotencyRows(ctx context.Context, sizes []int) ([]IdempotencyResult, error) {
	var rs []IdempotencyResult
	for _, source := range []string{SourceHTTP, SourceHTTPSlow, SourceSQS} {
		for _, n := range sizes {
			for _, side := range []string{SideIdempotency, SidePowertools} {
				r, err := RunIdempotency(ctx, side, source, n)
				if err != nil {
					return nil, fmt.Errorf("bench: idempotency %s %s %d: %w", side, source, n, err)
				}
				rs = append(rs, r)
			}
		}
	}
	return rs, nil
}

// IdempotencyFigureOutEnv names the file TestIdempotencyFigure writes
// the figure to; the test runs the figure only when it is set.
const IdempotencyFigureOutEnv = "HERDLOCK_BENCH_IDEMPOTENCY_OUT"

// RunIdempotencyFigure runs the figure in a test process of the module
// at root (its herds need a synctest bubble), and returns its rows.
func RunIdempotencyFigure(ctx context.Context, root string) ([]IdempotencyResult, error) {
	dir, err := os.MkdirTemp("", "herdlock-idempotency-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "idempotency.json")
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^TestIdempotencyFigure$", "-count", "1", "-timeout", "30m", "./internal/bench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), IdempotencyFigureOutEnv+"="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: idempotency figure: %v: %s", err, lastLines(b, 8))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var rs []IdempotencyResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("bench: idempotency figure: %w", err)
	}
	return rs, nil
}

// WriteIdempotencyTable prints the figure's rows as a Markdown table.
func WriteIdempotencyTable(w io.Writer, rs []IdempotencyResult) error {
	rs = append([]IdempotencyResult(nil), rs...)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Source != rs[j].Source {
			return rs[i].Source < rs[j].Source
		}
		return rs[i].N < rs[j].N
	})
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| source\t| N\t| side\t| upstream calls\t| errors\t| raised\t| invocations\t| all answered (s)\t| DynamoDB requests\t| throttled\t| WCU\t| RCU\t| answers\t|")
	fmt.Fprintln(tw, "|---\t|---:\t|---\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|---:\t|")
	for _, r := range rs {
		fmt.Fprintf(tw, "| %s\t| %d\t| %s\t| %d\t| %d\t| %d\t| %d\t| %.2f\t| %d\t| %d\t| %.0f\t| %.1f\t| %d\t|\n", r.Source, r.N, r.Side,
			r.UpstreamCalls, r.Errors, r.Raised, r.Invocations, r.AllAnsweredMs/1000, r.Requests, r.Throttled, r.WCU, r.RCU, r.Answers)
	}
	return tw.Flush()
}
