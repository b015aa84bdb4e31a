//go:build unix

package fault

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
)

// A real `benchfleet worker` process claims two long jobs and is killed
// with SIGKILL mid-job. After AckWait the jobs are redelivered to a second
// worker, which finishes them: every job has exactly one result, the
// killed worker's jobs carry attempt ≥ 2 and the second worker's id, and
// no result was ever written twice.
func TestWorkerProcessKilledMidJob(t *testing.T) {
	t.Parallel()
	bin := clitest.Binary(t)
	srv := fleettest.Server(t)
	const ackWait = 3 * time.Second
	tc := topology.Config{AckWait: ackWait}
	storeDir := t.TempDir()
	fb, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	store := NewCountingBucket(fb)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)

	crashy := clitest.Start(t, bin, "worker", "--nats", srv.ClientURL(), "--store", "file://"+storeDir,
		"--slots", "sim=2", "--id", "crashy", "--ack-wait", ackWait.String(),
		"--log-format", "json", "--work-dir", t.TempDir())
	status := func() *protocol.WorkerStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		e, err := topo.Workers.Get(ctx, "crashy")
		if err != nil {
			return nil
		}
		var st protocol.WorkerStatus
		if json.Unmarshal(e.Value(), &st) != nil {
			return nil
		}
		return &st
	}
	fleettest.Eventually(t, 30*time.Second, "worker process crashy to report its heartbeat", func() bool {
		select {
		case <-crashy.Done():
			t.Fatalf("worker process exited early: %v\n%s", crashy.Err(), crashy.Output())
		default:
		}
		return status() != nil
	})

	const run = "crash-sigkill"
	jobs := fleettest.SimJobs(t, run, 6, map[string]string{"sim.duration": "2s"})
	fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)

	// Wait until both of crashy's slots run a job, then kill it for real.
	held := map[string]bool{}
	fleettest.Eventually(t, 30*time.Second, "crashy to run two jobs", func() bool {
		st := status()
		if st == nil {
			return false
		}
		clear(held)
		for _, d := range st.Devices {
			if d.State == protocol.DeviceBusy && d.Job != "" {
				held[d.Job] = true
			}
		}
		return len(held) == 2
	})
	crashy.Kill()
	var ee *exec.ExitError
	if err := crashy.Err(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("worker process ended with %v, want killed by SIGKILL", crashy.Err())
	}
	for job := range held {
		if !strings.Contains(crashy.Output(), job) {
			t.Fatalf("the killed worker's log never mentions job %s it reported as running", job)
		}
	}

	// A second worker takes over: the queued jobs at once, the killed
	// worker's jobs once their AckWait runs out.
	nc, _ := fleettest.Connect(t, srv.ClientURL())
	fleettest.StartWorker(t, worker.Config{
		ID: "rescuer", Conn: nc, Store: store, Slots: fleettest.SimSlots("rescuer", 2), AckWait: tc.AckWait,
		IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop(),
	})
	fleettest.Eventually(t, 45*time.Second, "6 results", func() bool {
		rs, _, _ := index.QueryJSON(context.Background(), store, index.Filter{Run: run})
		return len(rs) == len(jobs)
	})
	results := fleettest.Results(t, store, run)
	written, conflicts, found := store.Counts()
	for _, j := range jobs {
		r, ok := results[j.ID]
		if !ok {
			t.Fatalf("job %s has no result", j.ID)
		}
		if r.Status != protocol.StatusPassed {
			t.Errorf("job %s: status %s (%v)", j.ID, r.Status, r.Error)
		}
		if r.Worker.ID != "rescuer" {
			t.Errorf("job %s finished by %s, want rescuer (crashy was killed before finishing anything)", j.ID, r.Worker.ID)
		}
		if held[j.ID] && r.Attempt < 2 {
			t.Errorf("job %s was running on the killed worker, but its result has attempt %d, want ≥ 2", j.ID, r.Attempt)
		}
		if !held[j.ID] && r.Attempt != 1 {
			t.Errorf("job %s was only queued when crashy died, but its result has attempt %d", j.ID, r.Attempt)
		}
		if n := written[storage.ResultKey(r.RunCreatedAt, run, j.ID)]; n != 1 {
			t.Errorf("job %s: result written %d times, want exactly once", j.ID, n)
		}
	}
	t.Logf("killed worker held %d jobs; all %d jobs have one result (write conflicts %d, duplicate deliveries caught %d)",
		len(held), len(jobs), conflicts, found)
}
