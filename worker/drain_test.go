package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

func busyJobs(w *worker.Worker) int {
	n := 0
	for _, d := range w.Status().Devices {
		if d.State == protocol.DeviceBusy {
			n++
		}
	}
	return n
}

// The first Stop drains: running jobs finish and pass, nothing new is
// claimed (the queued jobs stay queued on the consumer), and the worker
// reports draining until it is gone.
func TestStopDrainsRunningJobsClaimsNothingNew(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	w := fleettest.StartWorker(t, f.workerConfig(t, "drain-w", 2))

	const run = "drain-1"
	jobs := fleettest.SimJobs(t, run, 5, map[string]string{"sim.duration": "1200ms"})
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 10*time.Second, "two jobs running", func() bool { return busyJobs(w) == 2 })

	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	fleettest.Eventually(t, 5*time.Second, "the worker to report draining", func() bool { return w.Status().Draining })
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return after the running jobs finished")
	}
	results := fleettest.Results(t, f.store, run)
	if len(results) != 2 {
		t.Fatalf("%d results after the drain, want the 2 that were running", len(results))
	}
	for id, r := range results {
		if r.Status != protocol.StatusPassed || r.Attempt != 1 {
			t.Errorf("job %s: %s attempt %d, want passed on attempt 1", id, r.Status, r.Attempt)
		}
	}
	if p, ack := f.consumerPending(t, "sim", protocol.PriorityNormal); p != 3 || ack != 0 {
		t.Fatalf("after the drain: %d queued, %d unacked; want 3 queued, 0 unacked", p, ack)
	}
	// Its heartbeat is removed.
	if _, err := f.topo.Workers.Get(t.Context(), "drain-w"); err == nil {
		t.Error("the drained worker's heartbeat is still in bench-workers")
	}
}

// A second Stop stops at once: running jobs are handed back (Nak, not left
// to the ack wait) and another worker finishes them as their second attempt.
func TestSecondStopHandsJobsBack(t *testing.T) {
	t.Parallel()
	const ackWait = 20 * time.Second
	f := newFaultFleetAckWait(t, ackWait)
	wa := fleettest.StartWorker(t, f.workerConfig(t, "hard-a", 2))

	const run = "drain-2"
	jobs := fleettest.SimJobs(t, run, 2, map[string]string{"sim.duration": "1500ms"})
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 10*time.Second, "two jobs running", func() bool { return busyJobs(wa) == 2 })

	first := make(chan error, 1)
	go func() { first <- wa.Stop(context.Background()) }()
	fleettest.Eventually(t, 5*time.Second, "the worker to report draining", func() bool { return wa.Status().Draining })
	start := time.Now()
	if err := wa.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-first
	if d := time.Since(start); d > time.Second {
		t.Errorf("the second Stop took %s; want at once", d)
	}
	if rs := fleettest.Results(t, f.store, run); len(rs) != 0 {
		t.Fatalf("the hard-stopped worker recorded %d results", len(rs))
	}
	fleettest.StartWorker(t, f.workerConfig(t, "hard-b", 2))
	var results map[string]*protocol.Result
	// Handed back with a Nak, the jobs are redelivered at once: worker b
	// finishes them well before the ack wait would have released them.
	fleettest.Eventually(t, ackWait/2, "worker b to finish both jobs", func() bool {
		results = fleettest.Results(t, f.store, run)
		return len(results) == 2
	})
	for _, j := range jobs {
		r := results[j.ID]
		if r.Status != protocol.StatusPassed || r.Worker.ID != "hard-b" || r.Attempt != 2 {
			t.Errorf("job %s: %s by %s attempt %d; want passed by hard-b on attempt 2", j.ID, r.Status, r.Worker.ID, r.Attempt)
		}
	}
}
