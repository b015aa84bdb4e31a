package fleet

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/topology"
)

// CallTimeout bounds one call of a reader (a result read from the store,
// a JetStream request: a consumer made, its info), so that a store or a
// NATS server that stops answering holds no call past it (a request sent
// to a server that died is never answered): a waiter goes on, says the
// outage, and asks again at its next poll.
const CallTimeout = 10 * time.Second

// jsCallTimeout bounds one JetStream request of JSCall.
const jsCallTimeout = 5 * time.Second

// JSCall makes a JetStream request (fn) with its own deadline
// (jsCallTimeout), again while JetStream does not answer (a leader
// election, a lost quorum: topology.Retry), until ctx's deadline, or 30 s
// from now without one (then the error Is topology.ErrUnavailable). An
// answer, error or not, ends it. object names what is asked for.
func JSCall(ctx context.Context, object string, fn func(context.Context) error) error {
	return topology.Retry(ctx, topology.Config{CallTimeout: jsCallTimeout}, object, fn)
}

// GetKey reads key from kv with JSCall's deadline and retries.
func GetKey(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	var e jetstream.KeyValueEntry
	err := JSCall(ctx, "bucket "+kv.Bucket(), func(ctx context.Context) (err error) {
		e, err = kv.Get(ctx, key)
		return err
	})
	return e, err
}
