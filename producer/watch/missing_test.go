package watch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A job reported ended whose result does not reach the
// store read is told to OnMissing once, after ResultGrace; a job with no
// terminal event is not.
func TestWaitTellsOfAResultMissingAfterItsEvent(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &protocol.RunManifest{Run: "missing", CreatedAt: time.Now().UTC(),
		Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "sim", Model: "simnet"}, {ID: "j2", Pool: "sim"}}}
	publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: protocol.EventPassed, Status: protocol.StatusPassed, Worker: "w1"})
	var mu sync.Mutex
	told := map[string]int{}
	// The wait ends a while after the first call (time for a second,
	// wrong one), or fails after 30 s without one.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := &watch.Watcher{JS: js, Manifest: m, Store: store, Poll: 20 * time.Millisecond, ResultGrace: 50 * time.Millisecond,
		OnMissing: func(st *runstate.JobState, after time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if len(told) == 0 {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
			told[st.Job.ID]++
			if after != 50*time.Millisecond || st.Worker != "w1" {
				t.Errorf("OnMissing(%s, %s), worker %q", st.Job.ID, after, st.Worker)
			}
		}}
	if _, err := w.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if told["j1"] != 1 || told["j2"] != 0 {
		t.Fatalf("OnMissing calls: %v; want j1 once", told)
	}
}

// A dead letter's result ends the job, until a re-queue
// (`dlq retry`'s queued event) sets it aside; the later attempt's result,
// which replaces it in the store, ends the job again.
func TestWaitSetsADeadLettersResultAsideOnRequeue(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &protocol.RunManifest{Run: "deadrq", CreatedAt: time.Now().UTC().Add(-time.Minute), Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "sim"}}}
	publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: protocol.EventQueued})
	dead := passedResult(m, "j1")
	dead.Status, dead.Attempt, dead.FinishedAt = protocol.StatusError, 4, time.Now().UTC().Add(-time.Second)
	dead.Error = &protocol.ResultError{Class: protocol.ClassDeadLetter, Message: "the last of 4 attempts"}
	if _, err := storage.Deliver(t.Context(), store, dead, nil); err != nil {
		t.Fatal(err)
	}
	publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: protocol.EventDead, Attempt: 4})
	w := &watch.Watcher{JS: js, Manifest: m, Store: store, Poll: 20 * time.Millisecond}
	states, err := w.Wait(t.Context(), nil)
	if err != nil || states["j1"].Status() != protocol.StatusError {
		t.Fatalf("before the re-queue: %v, status %q; want error (the dead letter's result)", err, states["j1"].Status())
	}
	publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: protocol.EventQueued, Message: "re-queued from the dead-letter queue"})
	fleettest.Eventually(t, 10*time.Second, "the re-queue to set the dead letter's result aside", func() bool {
		states, err = w.Snapshot(t.Context())
		return err == nil && !states["j1"].Terminal()
	})
	again := passedResult(m, "j1")
	again.Attempt = 5
	if _, err := storage.Deliver(t.Context(), store, again, nil); err != nil {
		t.Fatalf("the later attempt's result: %v", err)
	}
	publishEvent(t, js, protocol.Event{Run: m.Run, Job: "j1", Kind: protocol.EventPassed, Attempt: 5})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	states, err = w.Wait(ctx, nil)
	if err != nil || states["j1"].Status() != protocol.StatusPassed || states["j1"].Result.Attempt != 5 {
		t.Fatalf("after the later attempt: %v, %+v", err, states["j1"])
	}
}
