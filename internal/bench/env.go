package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide"
	"github.com/herdlock/herdlock/lockcore"
)

// LockTable is the lock table every figure uses.
const LockTable = "bench-locks"

// Server is the DynamoDB-API server an Env talks to.
type Server interface {
	Endpoint() string
	Close() error
}

// Env is one DynamoDB-API server (Dynoxide unless said) with the lock
// table, and the counting HTTP path that every client of the run goes
// through. It is safe for concurrent use.
type Env struct {
	Server  Server
	Counter *Counter // every request of the run
	Client  *dynamodb.Client
	base    *http.Transport
}

// StartEnv starts Dynoxide on a free loopback port and creates the lock
// table. Close the Env when done.
func StartEnv(ctx context.Context) (*Env, error) {
	srv, err := dynoxide.Start(ctx)
	if err != nil {
		return nil, err
	}
	return startEnv(ctx, srv)
}

// StartDynaliteEnv is StartEnv on a dynalite server: figure 2 runs on both,
// because dynalite's expression parsing dominates its own figures.
func StartDynaliteEnv(ctx context.Context) (*Env, error) {
	srv, err := dynalite.Start(ctx)
	if err != nil {
		return nil, err
	}
	return startEnv(ctx, srv)
}

func startEnv(ctx context.Context, srv Server) (*Env, error) {
	base := &http.Transport{
		Proxy:               nil, // loopback only
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     30 * time.Second,
	}
	e := &Env{Server: srv, Counter: NewCounter(base), base: base}
	e.Client = e.newClient(e.Counter)
	if err := lockcore.CreateTable(ctx, e.Client, LockTable); err != nil {
		srv.Close()
		return nil, err
	}
	return e, nil
}

// Close stops the server.
func (e *Env) Close() error {
	e.base.CloseIdleConnections()
	return e.Server.Close()
}

func (e *Env) newClient(rt http.RoundTripper) *dynamodb.Client {
	return dynalite.NewClient(e.Server.Endpoint(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: rt}
	})
}

// Actor is one simulated process (one Lambda execution environment): its
// own SDK client, whose requests it counts on its own as well as in the
// Env's Counter, and which can be killed.
type Actor struct {
	Counter *Counter
	Client  *dynamodb.Client
	API     lockcore.DynamoAPI // Client, marking fallback reads
	Store   *lockcore.DynamoStore
	kill    *killable
}

// NewActor returns a new Actor on the lock table.
func (e *Env) NewActor() *Actor {
	c := NewCounter(e.Counter)
	k := &killable{next: c}
	client := e.newClient(k)
	api := &markingAPI{c: client}
	store, err := lockcore.NewDynamoStore(api, LockTable)
	if err != nil {
		panic(err) // unreachable: non-nil client, fixed table name
	}
	return &Actor{Counter: c, Client: client, API: api, Store: store, kill: k}
}

// Kill makes every later request of the actor fail as if its process had
// died: it never renews or releases again.
func (a *Actor) Kill() { a.kill.dead.Store(true) }

// markingAPI is a lockcore.DynamoAPI that marks the GetItem following a
// failed conditional UpdateItem that came back without the item (a server
// without ReturnValuesOnConditionCheckFailure, such as dynalite; Dynoxide
// returns the item, so there are none there) as a fallback read, so that
// the read rate counts only the reads DynamoDB would also serve.
type markingAPI struct {
	c      *dynamodb.Client
	failed atomic.Bool
}

func (m *markingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := m.c.UpdateItem(ctx, in, optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) == 0 {
		m.failed.Store(true)
	}
	return out, err
}

func (m *markingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if m.failed.Swap(false) {
		ctx = FallbackRead(ctx)
	}
	return m.c.GetItem(ctx, in, optFns...)
}

// PutItem passes through: lockcore's DynamoStore keeps release
// announcements only over a client that has it.
func (m *markingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return m.c.PutItem(ctx, in, optFns...)
}

// Every wrapper of the client in this package passes PutItem through.
var _ StoreAPI = (*markingAPI)(nil)

// StoreAPI is what a lockcore.DynamoStore uses of its client, announcements
// included.
type StoreAPI interface {
	lockcore.DynamoAPI
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ StoreAPI = (*dynamodb.Client)(nil)

// keyName returns a fresh lock id for one experiment.
func keyName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}
