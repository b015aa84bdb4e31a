package producer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
)

func publishEvent(t *testing.T, js jetstream.JetStream, e protocol.Event) {
	t.Helper()
	e.Schema, e.Time = protocol.SchemaEvent, time.Now().UTC()
	data, _ := json.Marshal(e)
	if _, err := js.Publish(t.Context(), protocol.EventSubject(e.Run, e.Job), data); err != nil {
		t.Fatal(err)
	}
}

// A job dead-lettered and then re-queued by `dlq retry` is not over: a
// waiter that replays the events must not stop at the dead letter.
func TestWaitReplaysPastARequeuedDeadLetter(t *testing.T) {
	t.Parallel()
	srv := testfleet.Server(t)
	_, js := testfleet.Connect(t, srv.ClientURL())
	testfleet.Topology(t, js, topology.Config{})
	m := &protocol.RunManifest{Run: "requeued", Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "sim"}}}
	for _, k := range []protocol.EventKind{protocol.EventQueued, protocol.EventClaimed, protocol.EventDead, protocol.EventQueued} {
		publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: k})
	}
	w := &producer.Watcher{JS: js, Manifest: m}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	states, err := w.Wait(ctx, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || states["j1"].Kind != protocol.EventQueued {
		t.Fatalf("wait ended with %v in state %q; want still waiting on the re-queued job", err, states["j1"].Kind)
	}
	// The job passes while the waiter is live.
	published := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		data, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: m.Run, Job: "j1", Time: time.Now().UTC(),
			Kind: protocol.EventPassed, Status: protocol.StatusPassed})
		_, err := js.Publish(context.Background(), protocol.EventSubject(m.Run, "j1"), data)
		published <- err
	}()
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	states, err = w.Wait(ctx, nil)
	if perr := <-published; perr != nil {
		t.Fatal(perr)
	}
	if err != nil || states["j1"].Status != protocol.StatusPassed {
		t.Fatalf("wait: %v, state %+v", err, states["j1"])
	}
}
