package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// denied is an AccessDeniedException as AWS words it: the message names
// the account, the role and the resource.
func denied(resource string) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: &smithy.GenericAPIError{
		Code:    "AccessDeniedException",
		Message: "User: arn:aws:sts::123456789012:assumed-role/rates-role/fn is not authorized to perform: dynamodb:PutItem on resource: " + resource,
	}}
}

// errorGroup is a handler's own log attribute that resolves to a group
// holding an error.
type errorGroup struct{ err error }

func (g errorGroup) LogValue() slog.Value {
	return slog.GroupValue(slog.String("step", "write"), slog.Any("error", g.err))
}

func TestAWSErrorMessagesNeverReachTheLog(t *testing.T) {
	tests := []struct {
		name string
		// fetch fails the invocation, or logs through the handler's logger.
		fetch func(ctx context.Context, _ event) (string, error)
	}{
		{"one wrapped error", func(context.Context, event) (string, error) {
			return "", fmt.Errorf("write rates: %w", denied("table/rates"))
		}},
		{"errors joined", func(context.Context, event) (string, error) {
			// A handler that works on several items and returns every
			// failure, as errors.Join does.
			return "", errors.Join(denied("table/rates"), fmt.Errorf("audit: %w", denied("table/audit")))
		}},
		{"an error in a group the attribute resolves to", func(ctx context.Context, _ event) (string, error) {
			lockmw.Logger(ctx).ErrorContext(ctx, "write failed", slog.Any("write", errorGroup{denied("table/rates")}))
			return "ok", nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncBuffer
			h, err := lockmw.New(tt.fetch, lockcore.NewMemoryStore(), keyOf,
				lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}),
				lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &syncBuffer{}}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := invocationContext(context.Background(), 10*time.Second, "req")
			defer cancel()
			_, _ = h(ctx, event{Key: "EUR-USD"})
			text := buf.String()
			if strings.Contains(text, "rates-role") || strings.Contains(text, "123456789012:assumed") {
				t.Errorf("an AWS error's message reached the log:\n%s", text)
			}
			if !strings.Contains(text, "AccessDeniedException") {
				t.Errorf("log:\n%s\nwant the error code", text)
			}
		})
	}
}
