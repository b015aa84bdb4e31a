package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/faulttest"
	"github.com/benchfleet/benchfleet/internal/testfleet"
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
	w := testfleet.StartWorker(t, f.workerConfig(t, "drain-w", 2))

	const run = "drain-1"
	jobs := testfleet.SimJobs(t, run, 5, map[string]string{"sim.duration": "1200ms"})
	testfleet.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	testfleet.Eventually(t, 10*time.Second, "two jobs running", func() bool { return busyJobs(w) == 2 })

	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	testfleet.Eventually(t, 5*time.Second, "the worker to report draining", func() bool { return w.Status().Draining })
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return after the running jobs finished")
	}
	results := testfleet.Results(t, f.store, run)
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
	wa := testfleet.StartWorker(t, f.workerConfig(t, "hard-a", 2))

	const run = "drain-2"
	jobs := testfleet.SimJobs(t, run, 2, map[string]string{"sim.duration": "1500ms"})
	testfleet.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	testfleet.Eventually(t, 10*time.Second, "two jobs running", func() bool { return busyJobs(wa) == 2 })

	first := make(chan error, 1)
	go func() { first <- wa.Stop(context.Background()) }()
	testfleet.Eventually(t, 5*time.Second, "the worker to report draining", func() bool { return wa.Status().Draining })
	start := time.Now()
	if err := wa.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-first
	if d := time.Since(start); d > time.Second {
		t.Errorf("the second Stop took %s; want at once", d)
	}
	if rs := testfleet.Results(t, f.store, run); len(rs) != 0 {
		t.Fatalf("the hard-stopped worker recorded %d results", len(rs))
	}
	testfleet.StartWorker(t, f.workerConfig(t, "hard-b", 2))
	var results map[string]*protocol.Result
	// Handed back with a Nak, the jobs are redelivered at once: worker b
	// finishes them well before the ack wait would have released them.
	testfleet.Eventually(t, ackWait/2, "worker b to finish both jobs", func() bool {
		results = testfleet.Results(t, f.store, run)
		return len(results) == 2
	})
	for _, j := range jobs {
		r := results[j.ID]
		if r.Status != protocol.StatusPassed || r.Worker.ID != "hard-b" || r.Attempt != 2 {
			t.Errorf("job %s: %s by %s attempt %d; want passed by hard-b on attempt 2", j.ID, r.Status, r.Worker.ID, r.Attempt)
		}
	}
}

// The real binary: the first SIGTERM drains (the process keeps running
// its jobs and reports draining), the second stops at once and hands the
// jobs back, and another worker finishes them as their second attempt.
func TestBinaryTwoSIGTERMs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := faulttest.Binary(t)
	const ackWait = 30 * time.Second
	f := newFaultFleetAckWait(t, ackWait)
	cmd := exec.Command(bin, "worker", "--nats", f.url, "--store", "file://"+t.TempDir(), "--slots", "sim=2",
		"--id", "bin-w", "--ack-wait", ackWait.String(), "--log-format", "json", "--work-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "BENCHFLEET_STATE_DIR="+t.TempDir()) // nothing of the test outside its own folders
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Wait returns at most this long after the process exits, even if
	// something still holds its stderr pipe.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	gone := make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		close(gone)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-gone:
		case <-time.After(30 * time.Second):
			t.Errorf("the worker process did not exit after SIGKILL")
		}
	})
	status := func() protocol.WorkerStatus {
		var st protocol.WorkerStatus
		if e, err := f.topo.Workers.Get(t.Context(), "bin-w"); err == nil {
			_ = json.Unmarshal(e.Value(), &st)
		}
		return st
	}
	const run = "bin-drain"
	jobs := testfleet.SimJobs(t, run, 3, map[string]string{"sim.duration": "20s"})
	testfleet.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	testfleet.Eventually(t, 20*time.Second, "the binary running two jobs", func() bool {
		busy := 0
		for _, d := range status().Devices {
			if d.State == protocol.DeviceBusy {
				busy++
			}
		}
		return busy == 2
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testfleet.Eventually(t, 5*time.Second, "the binary to report draining", func() bool { return status().Draining })
	select {
	case err := <-exited:
		t.Fatalf("the first SIGTERM ended the worker (%v) while jobs ran\n%s", err, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}
	if p, _ := f.consumerPending(t, "sim", protocol.PriorityNormal); p != 1 {
		t.Errorf("%d queued while draining, want the third job still queued", p)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("worker exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the second SIGTERM did not stop the worker\n%s", stderr.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the second SIGTERM took %s", d)
	}
	// Another worker gets all three at once (two handed back by Nak, well
	// before the 30s ack wait) and finishes them.
	testfleet.StartWorker(t, f.workerConfig(t, "bin-b", 3))
	testfleet.Eventually(t, ackWait/2, "worker bin-b to claim all three jobs", func() bool {
		_, ack := f.consumerPending(t, "sim", protocol.PriorityNormal)
		p, _ := f.consumerPending(t, "sim", protocol.PriorityNormal)
		return p == 0 && ack == 3 && len(eventsOfWorker(f.events(t, run), "bin-b", protocol.EventClaimed)) == 3
	})
	evs := f.events(t, run)
	second := 0
	for _, e := range eventsOfWorker(evs, "bin-b", protocol.EventClaimed) {
		if e.Attempt == 2 {
			second++
		}
	}
	if second != 2 {
		t.Errorf("%d jobs claimed by bin-b as attempt 2, want the 2 handed back", second)
	}
}

func eventsOfWorker(evs []protocol.Event, worker string, kind protocol.EventKind) []protocol.Event {
	var out []protocol.Event
	for _, e := range evs {
		if e.Worker == worker && e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}
