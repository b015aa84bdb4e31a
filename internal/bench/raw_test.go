package bench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/embedded"
)

// The raw baseline of `bench dispatch` returns a time only when every
// message was acked: on a healthy server it drains the stream; when its
// connection is gone (every fetch fails) it names how many messages were
// not acked instead of timing the failure as a fast baseline.
func TestRawBaselineChecksEveryAck(t *testing.T) {
	t.Parallel()
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx := t.Context()

	d, err := rawDispatch(ctx, srv.ClientURL(), 50, 3)
	if err != nil || d <= 0 {
		t.Fatalf("healthy baseline: %s, %v", d, err)
	}

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := createRawStream(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if err := publishRaw(ctx, js, 5); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	err = consumeRaw(ctx, cons, 5, 2)
	if err == nil || !strings.Contains(err.Error(), "5 of 5 messages not acked") {
		t.Fatalf("consume on a closed connection: %v, want an error naming 5 of 5 messages not acked", err)
	}
}
