package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

// boardHealth is the Health of a board that is always fine: unlike
// device.AlwaysHealthy it makes the slot a board (with a record in
// bench-health, watched for releases).
type boardHealth struct{}

func (boardHealth) Check(context.Context, device.Device) error { return nil }
func (boardHealth) Reset(context.Context, device.Device) error { return nil }

// A Start that fails part way (here: it cannot watch bench-health for
// board releases, after it began watching the cancel flags) stops what it
// started, leaving no subscription behind, and a second Start, once the
// cause is gone, starts the worker.
func TestStartThatFailsCleansUpAndCanBeRetried(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	ctx := t.Context()

	// bench-health's stream takes one consumer, which the test holds: the
	// worker's watch of it fails at once.
	kv, err := f.js.KeyValue(ctx, protocol.BucketHealth)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scfg := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	if err := f.js.DeleteStream(ctx, scfg.Name); err != nil {
		t.Fatal(err)
	}
	scfg.MaxConsumers = 1
	stream, err := f.js.CreateStream(ctx, scfg)
	if err != nil {
		t.Fatal(err)
	}
	blocker, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "blocker"})
	if err != nil {
		t.Fatal(err)
	}

	cfg := f.workerConfig(t, "start-w", 1)
	cfg.Slots[0].Health = boardHealth{}
	cfg.WorkDir = t.TempDir()
	nc := cfg.Conn
	// The connection's request mux, made by the first JetStream request,
	// stays for the connection's life: count from after it.
	njs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := njs.AccountInfo(ctx); err != nil {
		t.Fatal(err)
	}
	before := nc.NumSubscriptions()

	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err == nil {
		t.Fatal("Start succeeded with bench-health refusing the worker's watch")
	} else {
		t.Logf("first Start: %v", err)
	}
	if n := nc.NumSubscriptions(); n != before {
		t.Fatalf("%d subscriptions left after the failed Start, want %d (none of its own)", n, before)
	}

	if err := stream.DeleteConsumer(ctx, blocker.CachedInfo().Name); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(sctx); err != nil {
		cancel()
		t.Fatalf("second Start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		<-w.Done()
	})
	const run = "start-retry"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool {
		return len(fleettest.Results(t, f.store, run)) == 1
	})
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
