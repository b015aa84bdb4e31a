package worker_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// gatedStore holds every Put of a key containing hold until release is
// closed; other Puts go straight through.
type gatedStore struct {
	storage.Bucket
	hold    string
	held    chan struct{} // closed when the first held Put arrives
	release chan struct{}
}

func (g *gatedStore) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	if strings.Contains(key, g.hold) {
		select {
		case <-g.held:
		default:
			close(g.held)
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Bucket.Put(ctx, key, r, opts...)
}

// A slot takes its next job while its last one is still being recorded
// (the result write is slow), but that job is acked only once its result
// is durable, and a drain waits for it: Stop returns with both results
// stored and nothing left unacked.
func TestNextJobStartsWhileLastOneSettles(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	const run = "settle-1"
	jobs := fleettest.SimJobs(t, run, 2, map[string]string{"sim.duration": "100ms"})
	// Which job the slot takes first is the queue's order: submit order.
	first, second := jobs[0].ID, jobs[1].ID
	gs := &gatedStore{Bucket: f.store, hold: first + ".json", held: make(chan struct{}), release: make(chan struct{})}
	cfg := f.workerConfig(t, "settle-w", 1)
	cfg.Store = gs
	w := fleettest.StartWorker(t, cfg)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)

	select {
	case <-gs.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the first job's result was never written")
	}
	// The board is free: the second job runs (or has run) while the first
	// one's result is still held.
	fleettest.Eventually(t, 20*time.Second, "the second job to start while the first settles", func() bool {
		for _, e := range f.events(t, run) {
			if e.Job == second && e.Kind == protocol.EventClaimed {
				return true
			}
		}
		return false
	})
	if _, ack := f.consumerPending(t, "sim", protocol.PriorityNormal); ack < 1 {
		t.Fatalf("%d unacked with the first result not yet durable; want the first job unacked", ack)
	}
	if _, err := f.store.Attributes(t.Context(), storage.ResultKey(jobs[0].CreatedAt, run, first)); err == nil {
		t.Fatal("the held result is in the store")
	}

	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	// Stop must wait for the held result (however long the check waits).
	select {
	case <-stopped:
		t.Fatal("Stop returned while a result was still being written")
	case <-time.After(300 * time.Millisecond):
	}
	close(gs.release)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return after the result was released")
	}
	results := fleettest.Results(t, f.store, run)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for id, r := range results {
		if r.Status != protocol.StatusPassed || r.Attempt != 1 {
			t.Errorf("job %s: %s attempt %d, want passed on attempt 1", id, r.Status, r.Attempt)
		}
	}
	if p, ack := f.consumerPending(t, "sim", protocol.PriorityNormal); p != 0 || ack != 0 {
		t.Fatalf("after the drain: %d queued, %d unacked; want none", p, ack)
	}
}
