package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
)

func newStore(t *testing.T) storage.Bucket {
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Two workers with four sim slots each run 200 jobs; one worker is stopped
// hard while it runs jobs. Every job ends with exactly one passed result,
// and the stopped worker's jobs are finished by the other.
func TestTwoWorkersTwoHundredJobsOneStopped(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 5 * time.Second}
	store := newStore(t)
	ncA, _ := fleettest.Connect(t, srv.ClientURL())
	ncB, _ := fleettest.Connect(t, srv.ClientURL())
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)

	cfg := func(id string, nc *nats.Conn, slots []worker.Slot) worker.Config {
		return worker.Config{ID: id, Conn: nc, Store: store, Slots: slots, AckWait: tc.AckWait,
			Backoff: 50 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()}
	}
	wa := fleettest.StartWorker(t, cfg("worker-a", ncA, fleettest.SimSlots("a", 4)))
	fleettest.StartWorker(t, cfg("worker-b", ncB, fleettest.SimSlots("b", 4)))

	const run = "e2e-200"
	jobs := fleettest.SimJobs(t, run, 200, map[string]string{"sim.duration": "40ms"})
	// Every tenth job runs long, so the stopped worker is mid-job.
	for i := 0; i < len(jobs); i += 10 {
		jobs[i].Labels["sim.duration"] = "400ms"
	}
	res := fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	if res.Published != 200 {
		t.Fatalf("published %d jobs, want 200", res.Published)
	}
	// Stop worker A hard once it has finished some jobs and is running more.
	fleettest.Eventually(t, 30*time.Second, "worker a to be busy after finishing jobs", func() bool {
		st := wa.Status()
		done, busy := int64(0), 0
		for _, d := range st.Devices {
			done += d.Done
			if d.State == protocol.DeviceBusy {
				busy++
			}
		}
		return done >= 10 && busy >= 2
	})
	wa.Kill()
	<-wa.Done()

	var results map[string]*protocol.Result
	fleettest.Eventually(t, 90*time.Second, "200 results", func() bool {
		rs, _, _ := index.QueryJSON(context.Background(), store, index.Filter{Run: run})
		return len(rs) == 200
	})
	results = fleettest.Results(t, store, run)
	redelivered := 0
	for _, j := range jobs {
		r, ok := results[j.ID]
		if !ok {
			t.Fatalf("job %s has no result", j.ID)
		}
		if r.Status != protocol.StatusPassed {
			t.Errorf("job %s: status %s (%v)", j.ID, r.Status, r.Error)
		}
		if r.Attempt > 1 {
			redelivered++
			if r.Worker.ID != "worker-b" {
				t.Errorf("redelivered job %s finished by %s, want worker-b", j.ID, r.Worker.ID)
			}
		}
	}
	if redelivered == 0 {
		t.Fatal("no job was redelivered after worker a stopped mid-job")
	}
	t.Logf("200 results, %d redelivered after worker a stopped", redelivered)
}
