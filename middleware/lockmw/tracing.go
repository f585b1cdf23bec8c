package lockmw

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"
)

// The X-Ray SDK logs to stdout by default, which would corrupt the metrics
// that Lambda reads from stdout, and its context-missing strategy may panic.
// Importing lockmw therefore routes X-Ray's log to the middleware's logger
// (stderr until the first handler is wrapped) and installs a context-missing
// strategy that only logs. X-Ray's SetLogger is not safe for concurrent use,
// which is why this happens in init; a program that calls xray.SetLogger or
// xray.Configure in its own init still wins.
func init() {
	xray.SetLogger(xrayLogger{})
	_ = xray.Configure(xray.Config{ContextMissingStrategy: contextMissing{}})
}

// xrayLog is the logger X-Ray's messages go to, set by the first
// successful [New].
var xrayLog atomic.Pointer[slog.Logger]

var xrayFallback = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// xrayLogger is an xraylog.Logger writing to slog.
type xrayLogger struct{}

func (xrayLogger) Log(level xraylog.LogLevel, msg fmt.Stringer) {
	l := xrayLog.Load()
	if l == nil {
		l = xrayFallback
	}
	var lv slog.Level
	switch level {
	case xraylog.LogLevelDebug:
		lv = slog.LevelDebug
	case xraylog.LogLevelInfo:
		lv = slog.LevelInfo
	case xraylog.LogLevelWarn:
		lv = slog.LevelWarn
	default:
		lv = slog.LevelError
	}
	ctx := context.Background()
	if l.Enabled(ctx, lv) {
		l.Log(ctx, lv, msg.String(), slog.String("component", "xray"))
	}
}

// contextMissing is an X-Ray context-missing strategy that logs at debug
// level instead of panicking.
type contextMissing struct{}

func (contextMissing) ContextMissing(v any) {
	xrayLogger{}.Log(xraylog.LogLevelDebug, stringer(fmt.Sprint(v)))
}

type stringer string

func (s stringer) String() string { return string(s) }

// InstrumentDynamoDB adds X-Ray subsegments for every call of the AWS SDK
// clients made from cfg, the DynamoDB client of a [lockcore.DynamoStore]
// among them, using the X-Ray SDK's awsv2 instrumentation:
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	lockmw.InstrumentDynamoDB(&cfg)
//	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), table)
//
// The calls of the lock then appear under the middleware's "herdlock"
// subsegment, and the handler's own calls under the function's segment.
// Calls made with a context that carries no segment log at debug level and
// are not traced. It is not safe to call while clients are being made
// from cfg.
func InstrumentDynamoDB(cfg *aws.Config) {
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}

// Subsegment names and annotation keys.
const (
	segRoot    = "herdlock"
	segAcquire = "lock.acquire"
	segWait    = "lock.wait"
	segRelease = "lock.release"
)

// traceable reports whether ctx can carry subsegments: it holds a segment,
// or the trace header with which the Lambda runtime starts one.
func traceable(ctx context.Context) bool {
	if xray.GetSegment(ctx) != nil {
		return true
	}
	h, _ := ctx.Value(xray.LambdaTraceHeaderKey).(string)
	return h != ""
}

// tracer wraps the subsegments of one invocation; a nil *tracer traces
// nothing.
type tracer struct {
	root *xray.Segment
}

// beginTrace starts the invocation's root subsegment, or returns a nil
// tracer when tracing is off or ctx cannot be traced.
func beginTrace(ctx context.Context, on bool) (context.Context, *tracer) {
	if !on || !traceable(ctx) {
		return ctx, nil
	}
	tctx, seg := xray.BeginSubsegment(ctx, segRoot)
	if seg == nil {
		return ctx, nil
	}
	return tctx, &tracer{root: seg}
}

func (t *tracer) annotate(kv ...any) {
	if t == nil {
		return
	}
	annotate(t.root, kv...)
}

// sub starts a subsegment of ctx; it returns nil when t is nil.
func (t *tracer) sub(ctx context.Context, name string) (context.Context, *xray.Segment) {
	if t == nil {
		return ctx, nil
	}
	return xray.BeginSubsegment(ctx, name)
}

// backdated records a finished subsegment of ctx that began d ago.
func (t *tracer) backdated(ctx context.Context, name string, d time.Duration, kv ...any) {
	if t == nil {
		return
	}
	_, seg := xray.BeginSubsegment(ctx, name)
	if seg == nil {
		return
	}
	seg.Lock()
	seg.StartTime = float64(time.Now().Add(-d).UnixNano()) / float64(time.Second)
	seg.Unlock()
	annotate(seg, kv...)
	seg.Close(nil)
}

func (t *tracer) close(err error) {
	if t == nil {
		return
	}
	t.root.Close(err)
}

// annotate adds key/value annotation pairs to seg, which may be nil.
func annotate(seg *xray.Segment, kv ...any) {
	if seg == nil {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		v := kv[i+1]
		// X-Ray takes only bool, int, uint, float and string annotations.
		switch x := v.(type) {
		case int64:
			v = float64(x)
		case time.Duration:
			v = float64(x) / float64(time.Millisecond)
		}
		if err := seg.AddAnnotation(k, v); err != nil {
			xrayLogger{}.Log(xraylog.LogLevelWarn, stringer(err.Error()))
		}
	}
}

func closeSeg(seg *xray.Segment, err error) {
	if seg != nil {
		seg.Close(err)
	}
}
