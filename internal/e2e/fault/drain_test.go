//go:build unix

package fault

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// The real binary: the first SIGTERM drains (the process keeps running
// its jobs and reports draining), the second stops at once and hands the
// jobs back, and another worker finishes them as their second attempt.
func TestBinaryTwoSIGTERMs(t *testing.T) {
	t.Parallel()
	bin := clitest.Binary(t)
	const ackWait = 30 * time.Second
	f := fleettest.New(t, fleettest.Options{AckWait: ackWait})
	cmd := exec.Command(bin, "worker", "--nats", f.URL, "--store", "file://"+t.TempDir(), "--slots", "sim=2",
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
		if e, err := f.Topo.Workers.Get(t.Context(), "bin-w"); err == nil {
			_ = json.Unmarshal(e.Value(), &st)
		}
		return st
	}
	const run = "bin-drain"
	jobs := fleettest.SimJobs(t, run, 3, map[string]string{"sim.duration": "20s"})
	fleettest.Submit(t, f.JS, f.Topo, f.Store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 20*time.Second, "the binary running two jobs", func() bool {
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
	fleettest.Eventually(t, 5*time.Second, "the binary to report draining", func() bool { return status().Draining })
	select {
	case err := <-exited:
		t.Fatalf("the first SIGTERM ended the worker (%v) while jobs ran\n%s", err, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}
	if p, _ := f.Pending(t, "sim", protocol.PriorityNormal); p != 1 {
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
	fleettest.StartWorker(t, f.WorkerConfig(t, "bin-b", fleettest.SimSlots("bin-b", 3)))
	fleettest.Eventually(t, ackWait/2, "worker bin-b to claim all three jobs", func() bool {
		_, ack := f.Pending(t, "sim", protocol.PriorityNormal)
		p, _ := f.Pending(t, "sim", protocol.PriorityNormal)
		return p == 0 && ack == 3 && len(eventsOfWorker(f.Events(t, run), "bin-b", protocol.EventClaimed)) == 3
	})
	evs := f.Events(t, run)
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
