package fleet

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ephemeralInactive is how long an ephemeral read consumer outlives its
// last pull before the server removes it.
const ephemeralInactive = 5 * time.Minute

// ephemeralConsumer creates a pull consumer on stream through JetStream's
// legacy ephemeral endpoint ($JS.API.CONSUMER.CREATE.<stream>, no name in
// the subject), which refuses a durable: the only consumer endpoint the
// untrusted user of deploy/nats may use on BENCH_EVENTS, so that user
// cannot create durable consumers there (nats.go's ordered consumer asks
// $JS.API.CONSUMER.CREATE.<stream>.<name>, which permissions cannot keep
// from creating one). The consumer acknowledges nothing, lives in memory
// with one replica, and is removed by the server after ephemeralInactive
// without a pull. Unlike an ordered consumer it is not made again if the
// server loses it: a waiter's results come from the store, events are
// progress.
func ephemeralConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	cfg.Name, cfg.Durable = "ephemeral_"+rand.Text(), ""
	cfg.AckPolicy, cfg.MemoryStorage, cfg.Replicas = jetstream.AckNonePolicy, true, 1
	cfg.InactiveThreshold = ephemeralInactive
	if len(cfg.FilterSubjects) == 1 {
		cfg.FilterSubject, cfg.FilterSubjects = cfg.FilterSubjects[0], nil
	}
	req, err := json.Marshal(struct {
		Stream string                    `json:"stream_name"`
		Config *jetstream.ConsumerConfig `json:"config"`
	}{stream, &cfg})
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	msg, err := js.Conn().RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("create an ephemeral consumer on %s: %w", stream, err)
	}
	var resp struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("create an ephemeral consumer on %s: %w", stream, err)
	}
	if e := resp.Error; e != nil {
		return nil, fmt.Errorf("create an ephemeral consumer on %s: %w", stream, errors.New(e.Description))
	}
	return js.Consumer(ctx, stream, cfg.Name)
}

// ReadConsumer opens the consumer a read of stream uses: an ordered
// consumer, or with ephemeral one made by ephemeralConsumer.
func ReadConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig, ephemeral bool) (jetstream.Consumer, error) {
	if !ephemeral {
		return js.OrderedConsumer(ctx, stream, cfg)
	}
	return ephemeralConsumer(ctx, js, stream, jetstream.ConsumerConfig{
		FilterSubjects: cfg.FilterSubjects, DeliverPolicy: cfg.DeliverPolicy, OptStartSeq: cfg.OptStartSeq,
	})
}
