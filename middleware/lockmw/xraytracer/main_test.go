package xraytracer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

// childEnv makes the test binary run one Lambda-like process (see
// runChild) instead of the tests, so a test can read exactly what an
// invocation writes to stdout and sends to the X-Ray daemon.
const (
	childEnv         = "LOCKMW_TEST_CHILD"
	childEndpointEnv = "LOCKMW_TEST_DYNAMO_ENDPOINT"
	childTraceRoot   = "1-5759e988-bd862e3fe1be46a994272793"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs three invocations with every default that Lambda would
// give (metrics on stdout, JSON logs on stderr) and X-Ray tracing through
// xraytracer.Setup, against DynamoDB through an X-Ray-instrumented client:
// one traced, one without a trace header, and one whose handler fails.
func runChild() error {
	cfg := aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(os.Getenv(childEndpointEnv)),
		Credentials:  credentials.NewStaticCredentialsProvider("herdlock", "herdlock", ""),
	}
	tracer, err := xraytracer.Setup(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		return err
	}
	xraytracer.InstrumentDynamoDB(&cfg)
	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), "locks")
	if err != nil {
		return err
	}
	fail := errors.New("upstream 503")
	h := lockmw.Wrap(func(ctx context.Context, e childEvent) (string, error) {
		if e.Key == "fail" {
			return "", fail
		}
		return "ok", nil
	}, store, childKey, lockmw.WithTelemetry(lockmw.Telemetry{ColdStartMetric: true}), lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tracer}))

	invocations := []struct {
		key     string
		traced  bool
		wantErr error
	}{
		{"EUR-USD", true, nil},
		{"GBP-USD", false, nil},
		{"fail", true, fail},
	}
	for i, inv := range invocations {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(30*time.Second))
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
			AwsRequestID: fmt.Sprint("req-", i), InvokedFunctionArn: testARN,
		})
		if inv.traced {
			header := fmt.Sprintf("Root=%s;Parent=53995c3f42cd8ad%d;Sampled=1", childTraceRoot, i)
			//lint:ignore SA1029 the key that aws-lambda-go and the X-Ray SDK use
			ctx = context.WithValue(ctx, "x-amzn-trace-id", header)
		}
		_, err := h(ctx, childEvent{Key: inv.key})
		cancel()
		if !errors.Is(err, inv.wantErr) {
			return fmt.Errorf("invocation %d: error %v, want %v", i, err, inv.wantErr)
		}
	}
	return nil
}

// childEvent is the child's event: the lock key.
type childEvent struct {
	Key string `json:"key"`
}

func childKey(_ context.Context, e childEvent) (string, error) { return e.Key, nil }
