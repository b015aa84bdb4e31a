package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
)

// `runs cancel` counts as "being stopped" only the jobs
// of live workers. A job last claimed by a worker that was killed (no
// heartbeat left, or a stale one) is nobody's to stop: it is counted apart,
// as cancelled when redelivered.
func TestCancelCountsOnlyLiveWorkersJobs(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	_, js := testfleet.Connect(t, f.url)
	topo, err := topology.Open(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	const run = "cancel-orphans"
	jobs := testfleet.SimJobs(t, run, 3, map[string]string{"sim.duration": "60s"})
	testfleet.Submit(t, js, topo, f.store, run, protocol.PriorityNormal, jobs)
	testfleet.Eventually(t, 30*time.Second, "the live worker to run a job", func() bool {
		st := f.worker.Status()
		return len(st.Devices) == 1 && st.Devices[0].State == protocol.DeviceBusy
	})
	running := f.worker.Status().Devices[0].Job
	// The slot is busy a moment before its claim event is stored: cancel
	// reads the run's state from the events.
	m, err := producer.GetManifest(t.Context(), topo.Runs, run)
	if err != nil {
		t.Fatal(err)
	}
	testfleet.Eventually(t, 30*time.Second, "the live worker's claim in the run's events", func() bool {
		states, err := (&producer.Watcher{JS: js, Manifest: m}).Snapshot(t.Context())
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
	if _, err := topo.Workers.Put(t.Context(), "killed-2", stale); err != nil {
		t.Fatal(err)
	}
	for i, job := range ghosts {
		ev, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: run, Job: job, Time: now, Kind: protocol.EventClaimed,
			Worker: []string{"killed-1", "killed-2"}[i], Device: "sim-0", Attempt: 1})
		if _, err := js.Publish(t.Context(), protocol.WorkerEventSubject(run, job), ev); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := ciRun(t, f.args("runs", "cancel", run)...)
	if code != ExitOK {
		t.Fatalf("runs cancel: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "1 job being stopped") || !strings.Contains(out, "2 jobs of workers that are gone") {
		t.Errorf("runs cancel says:\n%s\nwant 1 job being stopped (the live worker's) and 2 of workers that are gone", out)
	}
}
