package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The raw JetStream baselines: the same server doing the same number of
// publishes, fetches and acks as benchfleet, without benchfleet.

// rawPayload is about a job's size.
const rawPayload = 600

// createRawStream is the baselines' stream: a work queue on file storage,
// as BENCH_JOBS is.
func createRawStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	return js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
}

// rawDispatch publishes n messages to a work-queue stream and consumes
// them with `slots` goroutines each fetching one and double-acking it. It
// returns the time from the first publish to the last ack, or an error
// when a publish or an ack failed.
func rawDispatch(ctx context.Context, url string, n, slots int) (time.Duration, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	stream, err := createRawStream(ctx, js)
	if err != nil {
		return 0, err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), "RAW")
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := publishRaw(ctx, js, n); err != nil {
		return 0, err
	}
	if err := consumeRaw(ctx, cons, n, slots); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// publishRaw publishes n messages with PublishAsync and checks every ack.
func publishRaw(ctx context.Context, js jetstream.JetStream, n int) error {
	payload := make([]byte, rawPayload)
	futures := make([]jetstream.PubAckFuture, 0, n)
	for i := 0; i < n; i++ {
		f, err := js.PublishAsync("raw.job", payload)
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		}
	}
	return nil
}

// consumeRaw fetches and double-acks n messages of cons on `slots`
// goroutines. Every message must be acked: a fetch or an ack that fails
// stops its goroutine, and consumeRaw then names how many were not acked
// (a baseline that skipped work would read as fast).
func consumeRaw(ctx context.Context, cons jetstream.Consumer, n, slots int) error {
	var acked atomic.Int64
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	var wg sync.WaitGroup
	for range slots {
		wg.Go(func() {
			for acked.Load() < int64(n) {
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
				if err != nil {
					fail(fmt.Errorf("fetch: %w", err))
					return
				}
				for m := range batch.Messages() {
					if err := m.DoubleAck(ctx); err != nil {
						fail(fmt.Errorf("ack: %w", err))
						return
					}
					acked.Add(1)
				}
				if err := batch.Error(); err != nil {
					fail(fmt.Errorf("fetch: %w", err))
					return
				}
			}
		})
	}
	wg.Wait()
	if a := acked.Load(); a < int64(n) {
		// Every goroutine that stops early has set first.
		return fmt.Errorf("%d of %d messages not acked: %w", int64(n)-a, n, first)
	}
	return nil
}

// rawPublish is the baseline of a submit: n messages of size bytes
// published with PublishAsync to a work-queue file-storage stream, then
// PublishAsyncComplete, each ack checked. Its JetStream context may have
// all n unacknowledged, so the baseline is the server's own pace and not
// nats.go's default bound on pending publishes. The stream is deleted
// after.
func rawPublish(ctx context.Context, nc *nats.Conn, n, size int) (time.Duration, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(max(n, 4000)))
	if err != nil {
		return 0, err
	}
	stream, err := createRawStream(ctx, js)
	if err != nil {
		return 0, err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), "RAW")
	payload := make([]byte, size)
	futures := make([]jetstream.PubAckFuture, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		f, err := js.PublishAsync("raw.job", payload)
		if err != nil {
			return 0, err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	d := time.Since(start)
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, err
		}
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs != uint64(n) {
		return 0, fmt.Errorf("raw stream holds %d messages, want %d", info.State.Msgs, n)
	}
	return d, nil
}
