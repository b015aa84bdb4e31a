package worker_test

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// A board another process holds when a job starts (what a crashed
// worker's job left running, an operator's tool) is the board's fault,
// not the benchmark's: the job is not run on it and not failed (the fake
// harness, like a real runtime, would fail its test as "device busy"); it
// is handed back as an infrastructure failure and passes once the board
// is let go.
func TestBusyBoardIsNeverABenchmarkFailure(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := harnesstest.NewTTHost(t, 1)
	node := filepath.Join(host.DevRoot, "0")
	env := map[string]string{"FAKE_DEV_LOCK": bdf0 + "=" + node}
	h := newTTHostWith(t, host, protocol.RunnerForge, harnesstest.NewCheckout(t, "forge", "", false), env)
	// Another process holds the board (its node open, and locked).
	holder := exec.Command(harnesstest.Python3(t), "-c", `import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
`, node)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("holder: %q", line)
	}
	f.start(t, "tt-busy", h.slots)
	const run = "forge-busy-board"
	j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	var retry protocol.Event
	fleettest.Eventually(t, time.Minute, "the job handed back", func() bool {
		if rs := fleettest.Results(t, f.store, run); rs[j.ID] != nil {
			t.Fatalf("the job ended on a busy board: %s (%+v)", rs[j.ID].Status, rs[j.ID].Error)
		}
		evs := eventsOf(runEvents(t, f.js, run), j.ID, protocol.EventRetrying)
		if len(evs) > 0 {
			retry = evs[0]
		}
		return len(evs) > 0
	})
	if !strings.Contains(retry.Message, "board tt0 busy") || !strings.Contains(retry.Message, node) {
		t.Fatalf("retrying: %q; want it to say board tt0 is busy, held open by the holder", retry.Message)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	r := f.results(t, run, 1)[j.ID]
	if r.Status != protocol.StatusPassed || r.Attempt < 2 {
		t.Fatalf("after the board was let go: %s at attempt %d (%+v), want passed on a later attempt", r.Status, r.Attempt, r.Error)
	}
}
