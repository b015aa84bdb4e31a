package watch_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

func publishEvent(t *testing.T, js jetstream.JetStream, e protocol.Event) {
	t.Helper()
	e.Schema, e.Time = protocol.SchemaEvent, time.Now().UTC()
	data, _ := json.Marshal(e)
	subject := protocol.WorkerEventSubject(e.Run, e.Job) // as a worker does
	if protocol.ProducerEventKind(e.Kind) {
		subject = protocol.EventSubject(e.Run, e.Job)
	}
	if _, err := js.Publish(t.Context(), subject, data); err != nil {
		t.Fatal(err)
	}
}

// A job dead-lettered and then re-queued by `dlq retry` is not over: a
// waiter that replays the events must not stop at the dead letter.
func TestWaitReplaysPastARequeuedDeadLetter(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &protocol.RunManifest{Run: "requeued", CreatedAt: time.Now().UTC(), Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "sim"}}}
	for _, k := range []protocol.EventKind{protocol.EventQueued, protocol.EventClaimed, protocol.EventDead, protocol.EventQueued} {
		publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: k})
	}
	w := &watch.Watcher{JS: js, Manifest: m, Store: store, Poll: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	states, err := w.Wait(ctx, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || states["j1"].Kind != protocol.EventQueued {
		t.Fatalf("wait ended with %v in state %q; want still waiting on the re-queued job", err, states["j1"].Kind)
	}
	// The job passes while the waiter is live: its result is stored, then
	// its event published.
	published := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := storage.PutResult(context.Background(), store, passedResult(m, "j1")); err != nil {
			published <- err
			return
		}
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
	if err != nil || states["j1"].Status() != protocol.StatusPassed {
		t.Fatalf("wait: %v, state %+v", err, states["j1"])
	}
}

func passedResult(m *protocol.RunManifest, job string) *protocol.Result {
	return &protocol.Result{Schema: protocol.SchemaResult, Job: job, Run: m.Run, RunCreatedAt: m.CreatedAt,
		Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Attempt: 1, StartedAt: m.CreatedAt, FinishedAt: m.CreatedAt,
		Measurements: protocol.Measurements{SamplesPerSec: 100}, PCC: protocol.PCC{Value: 1, Min: 0.99, Passed: true}}
}

// Events are progress, not truth: a terminal event for a job whose result
// is not stored never ends it (a producer may publish any event), and a
// result stored without any event (events lost) does.
func TestWaitConcludesFromStoredResults(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &protocol.RunManifest{Run: "forged", CreatedAt: time.Now().UTC(),
		Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "sim"}, {ID: "j2", Pool: "sim"}}}
	publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: protocol.EventPassed, Status: protocol.StatusPassed,
		Result: storage.ResultKey(m.CreatedAt, m.Run, "j1"), SamplesPerSec: 1e6})
	// A result stored under another job's key does not count either.
	other := passedResult(m, "j9")
	other.Job = "j9"
	if _, err := storage.PutResult(t.Context(), store, other); err != nil {
		t.Fatal(err)
	}
	w := &watch.Watcher{JS: js, Manifest: m, Store: store, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	states, err := w.Wait(ctx, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait ended (%v) though no result is stored", err)
	}
	for _, id := range []string{"j1", "j2"} {
		if st := states[id]; st.Terminal() || st.Status() != "" {
			t.Errorf("%s: terminal %v status %q without a stored result", id, st.Terminal(), st.Status())
		}
	}
	for _, row := range runstate.Rows(m, states) {
		if row.Status == protocol.StatusPassed {
			t.Errorf("row %s passed without a result", row.Job)
		}
	}
	// Results stored (no events for j2 at all): the wait ends on them.
	for _, id := range []string{"j1", "j2"} {
		r := passedResult(m, id)
		if id == "j2" {
			r.Status, r.Error = protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "pcc"}
		}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	states, err = w.Wait(ctx, nil)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if s := states["j1"].Status(); s != protocol.StatusPassed {
		t.Errorf("j1: %q", s)
	}
	if s := states["j2"].Status(); s != protocol.StatusFailed {
		t.Errorf("j2: %q", s)
	}
	if got := states["j1"].Result.Measurements.SamplesPerSec; got != 100 {
		t.Errorf("j1 figures from the event, not the result: %v", got)
	}
}
