package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReadStored calls fn for every message stored in stream (only those on
// filters, when given), oldest first, and returns when it has seen the
// messages that were there when it started; it does not wait for more. It
// returns the stream sequence of the last message read (0 when none).
// Each request has its own deadline (CallTimeout; a fetch 5 s), so a
// server that stops answering fails it rather than holding it until ctx
// ends. Its consumer is deleted when it returns: a stream takes at most
// 1,000 consumers by default (nats-server 2.15), and a reader's would
// otherwise stay until the server's inactivity threshold (5 min).
func ReadStored(ctx context.Context, js jetstream.JetStream, stream string, filters []string, fn func(jetstream.Msg)) (uint64, error) {
	return ReadStoredFrom(ctx, js, stream, filters, 1, false, fn)
}

// ReadStoredFrom is ReadStored from the stream sequence from on (1: all),
// through an ephemeralConsumer with ephemeral. The sequence returned is
// that of the last message read, also when it fails half way (0 when
// none was).
func ReadStoredFrom(ctx context.Context, js jetstream.JetStream, stream string, filters []string, from uint64, ephemeral bool, fn func(jetstream.Msg)) (uint64, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	cons, err := ReadConsumer(cctx, js, stream, cfg, ephemeral)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", stream, err)
	}
	defer dropConsumer(js, stream, cons)
	var last uint64
	info, err := cons.Info(cctx)
	if err != nil {
		return last, fmt.Errorf("read %s: %w", stream, err)
	}
	for pending := info.NumPending; pending > 0; {
		batch, err := cons.Fetch(int(min(pending, 512)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return last, fmt.Errorf("read %s: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if meta, err := m.Metadata(); err == nil {
				pending, last = meta.NumPending, meta.Sequence.Stream
			}
			fn(m)
		}
		if err := batch.Error(); err != nil {
			return last, fmt.Errorf("read %s: %w", stream, err)
		}
		if n == 0 {
			break
		}
	}
	return last, nil
}

// dropConsumer deletes a read consumer once its reader is done, with a
// deadline of its own (the reader's ctx may have ended). A user who may
// not delete consumers (deploy/nats's untrusted) leaves it to the server's
// inactivity threshold.
func dropConsumer(js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, info.Name)
}
