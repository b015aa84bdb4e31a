package submit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
)

// CancelRun counts as "being stopped" only the jobs of live workers. A job
// last claimed by a worker that was killed (no heartbeat left, or a stale
// one) is nobody's to stop: it is counted apart (Orphaned), as cancelled
// when redelivered, and the summary `runs cancel` prints says so.
func TestCancelCountsOnlyLiveWorkersJobs(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{AckWait: 5 * time.Second})
	w := fleettest.StartWorker(t, f.WorkerConfig(t, "live", fleettest.SimSlots("sim", 1)))
	const run = "cancel-orphans"
	jobs := fleettest.SimJobs(t, run, 3, map[string]string{"sim.duration": "60s"})
	fleettest.Submit(t, f.JS, f.Topo, f.Store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 30*time.Second, "the live worker to run a job", func() bool {
		st := w.Status()
		return len(st.Devices) == 1 && st.Devices[0].State == protocol.DeviceBusy
	})
	running := w.Status().Devices[0].Job
	// The slot is busy a moment before its claim event is stored: cancel
	// reads the run's state from the events.
	m, err := runstate.GetManifest(t.Context(), f.Topo.Runs, run)
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "the live worker's claim in the run's events", func() bool {
		states, err := (&watch.Watcher{JS: f.JS, Manifest: m}).Snapshot(t.Context())
		return err == nil && states[running] != nil && states[running].OnBoard()
	})
	// The other two jobs' last events are claims by workers that were then
	// killed: one left no heartbeat, the other a stale one.
	var ghosts []string
	for _, j := range jobs {
		if j.ID != running {
			ghosts = append(ghosts, j.ID)
		}
	}
	now := time.Now().UTC()
	stale, _ := json.Marshal(protocol.WorkerStatus{Schema: protocol.SchemaWorker, ID: "killed-2", Host: "h2", Time: now.Add(-time.Minute)})
	if _, err := f.Topo.Workers.Put(t.Context(), "killed-2", stale); err != nil {
		t.Fatal(err)
	}
	for i, job := range ghosts {
		ev, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: run, Job: job, Time: now, Kind: protocol.EventClaimed,
			Worker: []string{"killed-1", "killed-2"}[i], Device: "sim-0", Attempt: 1})
		if _, err := f.JS.Publish(t.Context(), protocol.WorkerEventSubject(run, job), ev); err != nil {
			t.Fatal(err)
		}
	}
	out, err := submit.CancelRun(t.Context(), f.JS, submit.CancelRequest{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if out.Finished || out.Running != 1 || out.Orphaned != 2 || out.Removed != 0 {
		t.Errorf("cancel: %+v, want 1 job running (the live worker's), 2 orphaned, none removed", out)
	}
	const want = "0 jobs removed from the queue, 1 job being stopped, 2 jobs of workers that are gone (cancelled when redelivered)"
	if got := submit.CancelSummary(out); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
