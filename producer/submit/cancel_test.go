package submit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// CancelRun of a run whose jobs have all ended changes nothing: Finished,
// no cancel flag set, no job removed.
func TestCancelFinishedRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{})
	fleettest.StartWorker(t, f.WorkerConfig(t, "w", fleettest.SimSlots("sim", 1)))
	const run = "done1"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "1ms"})
	fleettest.Submit(t, f.JS, f.Topo, f.Store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool { return len(fleettest.Results(t, f.Store, run)) == 1 })
	out, err := submit.CancelRun(t.Context(), f.JS, submit.CancelRequest{Run: run, Store: f.Store})
	if err != nil || !out.Finished || out.Removed != 0 || out.Running != 0 {
		t.Fatalf("cancel of a finished run: %+v, %v; want Finished and nothing changed", out, err)
	}
	if _, err := f.Topo.Runs.Get(t.Context(), protocol.CancelKey(run)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("cancel flag of a finished run: %v, want none", err)
	}
	if r := fleettest.Results(t, f.Store, run)[jobs[0].ID]; r == nil || r.Status != protocol.StatusPassed {
		t.Errorf("the finished job's result: %+v, want it passed still", r)
	}
}

// CancelRun removes the run's queued jobs from BENCH_JOBS, also those of
// pools no worker serves, and ends each with a cancelled event and (with a
// Store) a cancelled result; an unknown run is jetstream.ErrKeyNotFound.
func TestCancelRemovesQueuedJobs(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{}) // no worker serves any pool
	if _, err := submit.CancelRun(t.Context(), f.JS, submit.CancelRequest{Run: "nosuchrun"}); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("cancel of an unknown run: %v, want jetstream.ErrKeyNotFound", err)
	}
	const run = "orphan1"
	jobs := fleettest.SimJobs(t, run, 2, nil)
	fleettest.Submit(t, f.JS, f.Topo, f.Store, run, protocol.PriorityNormal, jobs)
	if p, _ := f.Pending(t, "sim", protocol.PriorityNormal); p != 2 {
		t.Fatalf("%d jobs queued before cancel, want 2", p)
	}
	out, err := submit.CancelRun(t.Context(), f.JS, submit.CancelRequest{Run: run, Store: f.Store})
	if err != nil || out.Finished || out.Removed != 2 || out.Running != 0 {
		t.Fatalf("cancel: %+v, %v; want 2 removed", out, err)
	}
	if p, _ := f.Pending(t, "sim", protocol.PriorityNormal); p != 0 {
		t.Errorf("%d jobs still queued after cancel, want 0", p)
	}
	if _, err := f.Topo.Runs.Get(t.Context(), protocol.CancelKey(run)); err != nil {
		t.Errorf("the run's cancel flag: %v", err)
	}
	rs := fleettest.Results(t, f.Store, run)
	evs := f.Events(t, run)
	for _, j := range jobs {
		if r := rs[j.ID]; r == nil || r.Status != protocol.StatusCancelled {
			t.Errorf("job %s: result %+v, want cancelled", j.ID, r)
		}
		n := 0
		for _, e := range evs {
			if e.Job == j.ID && e.Kind == protocol.EventCancelled {
				n++
			}
		}
		if n != 1 {
			t.Errorf("job %s: %d cancelled events, want 1", j.ID, n)
		}
	}
}
