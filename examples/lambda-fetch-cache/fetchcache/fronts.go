package fetchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// Event sources the function tells apart, by the event's shape (see
// [Classify]).
const (
	SourceDirect      = "direct"       // a bare Request: {"pair": "EUR-USD"}
	SourceHTTPAPI     = "http-api"     // API Gateway HTTP API, payload 2.0: GET /rates/{pair}
	SourceFunctionURL = "function-url" // the function URL: ?pair=EUR-USD or a {"pair": ...} body
	SourceSQS         = "sqs"          // an SQS batch of {"pair": ...} bodies
)

// GroupSuffixFronts is the lock group suffix of the HTTP fronts and the
// queue front: they publish one answer format (httpmw's and sqsmw's), so
// they share one lock group and a refresh and a GET of the same pair
// coalesce. The direct front publishes a Response and keeps the group
// itself; the cache table is shared by all.
const GroupSuffixFronts = "-fronts"

// Classify names the event source of an event by its shape: Records of
// "aws:sqs", a requestContext.http of a function URL domain or of an HTTP
// API, or else a direct invocation.
func Classify(raw json.RawMessage) string {
	var peek struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
		RequestContext struct {
			DomainName string           `json:"domainName"`
			HTTP       *json.RawMessage `json:"http"`
		} `json:"requestContext"`
	}
	if json.Unmarshal(raw, &peek) != nil {
		return SourceDirect // the direct front answers it as a bad request
	}
	switch {
	case len(peek.Records) > 0 && peek.Records[0].EventSource == "aws:sqs":
		return SourceSQS
	case peek.RequestContext.HTTP != nil && strings.Contains(peek.RequestContext.DomainName, ".lambda-url."):
		return SourceFunctionURL
	case peek.RequestContext.HTTP != nil:
		return SourceHTTPAPI
	}
	return SourceDirect
}

// Fronts are the function's front doors, one typed handler each; Handle
// dispatches an event to the one its shape names.
type Fronts struct {
	Direct      func(context.Context, Request) (Response, error)
	HTTPAPI     func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	FunctionURL func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)
	// Queue is nil in the inline answer mode: a refresh has nowhere to
	// keep what it fetched.
	Queue func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

// ErrNoQueueFront: an SQS batch reached a function in the inline answer
// mode, which has no cache table for a refresh to fill.
var ErrNoQueueFront = errors.New("fetchcache: the queue front needs ANSWER_MODE=cache")

// Handle decodes raw as the event its shape names and runs that front.
func (f Fronts) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	switch Classify(raw) {
	case SourceSQS:
		if f.Queue == nil {
			return nil, ErrNoQueueFront
		}
		return run(ctx, raw, f.Queue)
	case SourceHTTPAPI:
		return run(ctx, raw, f.HTTPAPI)
	case SourceFunctionURL:
		return run(ctx, raw, f.FunctionURL)
	}
	return run(ctx, raw, f.Direct)
}

// run decodes raw as In and calls h.
func run[In, Out any](ctx context.Context, raw json.RawMessage, h func(context.Context, In) (Out, error)) (any, error) {
	var in In
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, errors.Join(ErrBadRequest, errors.New("the event is not JSON of the expected shape"))
	}
	out, err := h(ctx, in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NewFronts returns the function's front doors around the direct handler
// (from [NewHandler] or [NewInlineHandler]). With a cache (the cache answer
// mode) the HTTP holder answers from the cache when it is fresh and fills
// it when not, and the queue front refreshes it; without one (inline) the
// HTTP holder fetches, and there is no queue front. The HTTP fronts answer
// 200 with the holder's [Response] for the whole burst, with Cache-Control
// for what is left of fresh; a throttled upstream is 429 with Retry-After
// for the whole burst. The HTTP API front also routes POST /orders
// ([OrdersRouteKey]) to the order handler, made idempotent by the
// Idempotency-Key header (idempotency.WrapHTTP, records in the lock group
// with [GroupSuffixIdempotency]), and the queue front runs each record once
// per message id (idempotency.SQSHandler) inside its pair's group. opts
// are as for the direct handler.
func NewFronts(direct func(context.Context, Request) (Response, error), store storeapi.Store, group string, fresh time.Duration,
	cache *Cache, up *Upstream, opts ...lockmw.Option) (Fronts, error) {
	a := &app{cache: cache, upstream: up, now: time.Now}
	fetch := a.fetchInline
	if cache != nil {
		fetch = a.fetch
	}
	httpOpts := []httpmw.Option{
		httpmw.WithFreshSuccess(fresh),
		httpmw.WithLockmwOptions(append([]lockmw.Option{lockmw.WithLockGroup(group + GroupSuffixFronts)}, opts...)...),
	}
	rates, err := httpmw.NewHTTPAPI(httpFetch(fetch, a.fetchUnlocked, pathKey), store, pathKey, httpOpts...)
	if err != nil {
		return Fronts{}, err
	}
	funcURL, err := httpmw.NewFunctionURL(httpFetch(fetch, a.fetchUnlocked, urlKey), store, urlKey, httpOpts...)
	if err != nil {
		return Fronts{}, err
	}
	// The idempotency records' group comes after opts, whose lock group
	// is the direct handler's.
	idemOpts := idempotency.WithLockmwOptions(append(append([]lockmw.Option(nil), opts...), lockmw.WithLockGroup(group+GroupSuffixIdempotency))...)
	orders := idempotency.WrapHTTP(a.createOrder, store, idempotency.WithKeys(idempotency.Keys{Prefix: idempotencyPrefixOrders}), idemOpts)
	f := Fronts{
		Direct: direct,
		HTTPAPI: func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			if req.RouteKey == OrdersRouteKey {
				return orders(ctx, req)
			}
			return rates(ctx, req)
		},
		FunctionURL: funcURL,
	}
	if cache != nil {
		records, err := idempotency.SQSHandler(a.refreshRecord, store, idempotency.MessageID,
			idempotency.WithKeys(idempotency.Keys{Prefix: idempotencyPrefixRefresh}), idemOpts)
		if err != nil {
			return Fronts{}, err
		}
		f.Queue, err = sqsmw.New(func(ctx context.Context, pair string, recs []events.SQSMessage) error {
			info, ok := lockmw.FromContext(ctx)
			if !ok {
				return errors.New("fetchcache: no lock information in the context")
			}
			return records(context.WithValue(ctx, pairHoldKey{}, &pairHold{pair: pair, info: info}), pair, recs)
		}, store, sqsmw.JSONBody(func(r Request) (string, error) { return Key(context.Background(), r) }),
			sqsmw.WithLockmwOptions(append([]lockmw.Option{lockmw.WithLockGroup(group + GroupSuffixFronts),
				lockmw.WithLockOptions(lockcore.WithFreshSuccess(fresh))}, opts...)...))
		if err != nil {
			return Fronts{}, err
		}
	}
	return f, nil
}

// GroupSuffixIdempotency is the lock group suffix of the idempotency
// records (package idempotency's lock group): the orders of POST /orders
// and the refresh queue's message ids, apart by their prefixes.
const GroupSuffixIdempotency = "-idempotency"

// Key prefixes of the idempotency records.
const (
	idempotencyPrefixOrders  = "orders"
	idempotencyPrefixRefresh = "refresh"
)

// httpFetch is the HTTP handler for the pair the request names: fetch
// when it holds the lock (a GET or HEAD), unlocked when it runs without
// (another method, which httpmw never answers from another request's
// answer).
func httpFetch[Req httpmw.Request](fetch, unlocked func(context.Context, Request) (Response, error),
	key func(context.Context, Req) (string, error)) func(context.Context, Req) (httpmw.Response[Response], error) {
	return func(ctx context.Context, req Req) (httpmw.Response[Response], error) {
		pair, err := key(ctx, req)
		if err != nil {
			return httpmw.Response[Response]{}, err
		}
		run := fetch
		if _, held := lockmw.FromContext(ctx); !held {
			run = unlocked // this request's choice only
		}
		r, err := run(ctx, Request{Pair: pair})
		if err != nil {
			return httpmw.Response[Response]{}, err
		}
		return httpmw.OK(r), nil
	}
}

// fetchUnlocked answers a request that runs without the lock: from the
// cache when it is fresh, else from the upstream, whose data it does not
// store (a write to the cache needs the holder's fence).
func (a *app) fetchUnlocked(ctx context.Context, req Request) (Response, error) {
	if a.cache != nil {
		e, found, err := a.cache.Get(ctx, req.Pair)
		if err != nil {
			return Response{}, err
		}
		if found && e.fresh(a.now()) {
			return fromEntry(e, OutcomeNone, lockmw.Info{}), nil
		}
	}
	data, err := a.upstream.Fetch(ctx, req.Pair)
	_ = lockmw.Metrics(ctx).Add(MetricUpstreamCall, emf.Count, 1)
	if err != nil {
		return Response{}, ownFailure(req.Pair, err, a.now())
	}
	return Response{Pair: req.Pair, Data: data, Source: SourceUpstream, Outcome: OutcomeNone, FetchedAtMs: a.now().UnixMilli()}, nil
}

// pathKey is the pair of GET /rates/{pair}, checked.
func pathKey(ctx context.Context, req events.APIGatewayV2HTTPRequest) (string, error) {
	p, err := httpmw.PathParam[events.APIGatewayV2HTTPRequest]("pair")(ctx, req)
	if err != nil {
		return "", err
	}
	return clientKey(ctx, Request{Pair: p})
}

// clientKey is Key for a client's request: a malformed pair is also
// httpmw's bad request (answered 400, logged at Warn).
func clientKey(ctx context.Context, r Request) (string, error) {
	id, err := Key(ctx, r)
	if err != nil {
		return "", fmt.Errorf("%w: %w", httpmw.ErrBadRequest, err)
	}
	return id, nil
}

// urlKey is the pair of a function URL request: ?pair=, else the
// {"pair": ...} body, checked.
func urlKey(ctx context.Context, req events.LambdaFunctionURLRequest) (string, error) {
	if p, err := httpmw.Query[events.LambdaFunctionURLRequest]("pair")(ctx, req); err == nil {
		return clientKey(ctx, Request{Pair: p})
	}
	r, err := httpmw.DecodeJSON[Request](req)
	if err != nil {
		return "", err
	}
	return clientKey(ctx, r)
}

// pairHold is what the records of one pair's group share while sqsmw holds
// the pair's lock: the lock's information (its fence writes the cache) and
// the first failure, which the group's later records return without
// calling the upstream again.
type pairHold struct {
	pair string
	info lockmw.Info
	err  error
}

type pairHoldKey struct{}

// refreshRecord is the queue front's handler of one record, run once per
// message id (idempotency.SQSHandler): the record's pair fetched into the
// cache under the pair's lock (nothing to do while the cache is fresh),
// so that a redelivered record does nothing even after the cache expired.
// The records of a group run one after the other.
func (a *app) refreshRecord(ctx context.Context, _ events.SQSMessage) error {
	h, _ := ctx.Value(pairHoldKey{}).(*pairHold)
	if h == nil {
		return errors.New("fetchcache: a refresh record outside its pair's lock")
	}
	if h.err != nil {
		return h.err
	}
	_, h.err = a.fetchHeld(ctx, Request{Pair: h.pair}, h.info)
	return h.err
}
