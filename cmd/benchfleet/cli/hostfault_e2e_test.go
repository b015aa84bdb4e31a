package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	workers "github.com/benchfleet/benchfleet/worker/fleet"
)

// Issue 36, finding 1: a host whose harness environment is broken (its
// test module cannot be imported: torch without torch_xla), with no
// health_probe and a board check that passes, joins a farm whose good host
// has two boards and six jobs to run. Real worker processes, real pytest.
// The broken host never runs a job it faulted on again and its faults use
// up no job's deliveries: all six jobs pass on the good host and none is
// dead-lettered. After three different jobs said it cannot run the
// harness, the broken host is out of service for that harness, and `fleet
// status` says why.
func TestBrokenHarnessHostWithoutProbeLosesNoJob(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	dir := t.TempDir()
	storeURL := "file://" + filepath.Join(dir, "store")
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(id string, host *harnesstest.TTHost, c *harnesstest.Checkout) string {
		path := filepath.Join(dir, id+".yaml")
		// No health_probe: the board check stands in, and passes.
		writeFile(t, path, fmt.Sprintf(`nats: %s
store: %s
id: %s
discovery: {enabled: true, tt_smi: %s, dev_root: %s, sysfs_root: %s, runner: tt-xla}
harnesses:
  tt-xla: {workdir: %s, python: %s, env: {FAKE_ITER_MS: "400", FAKE_XLA_LOOP: "8"}}
`, srv.ClientURL(), storeURL, id, host.TTSMI, host.DevRoot, host.Sys, c.Workdir, c.Python))
		return path
	}
	goodHost := harnesstest.NewTTHost(t, 2)
	good := config("tt-good", goodHost, harnesstest.NewCheckout(t, "tt-xla", filepath.Join(dir, "good"), false))
	brokenHost := harnesstest.NewTTHost(t, 2)
	broken := config("tt-broken", brokenHost, harnesstest.NewCheckoutMissing(t, "tt-xla", filepath.Join(dir, "broken"), "torch_xla"))

	startWorkerBinary(t, good, tmp) // its log is shown if the test fails
	fleet := func() []protocol.WorkerStatus {
		code, out, _ := run(t, "fleet", "status", "--nats", srv.ClientURL(), "--format", "json")
		if code != 0 {
			return nil // the topology may not exist yet
		}
		var sts []protocol.WorkerStatus
		if err := json.Unmarshal([]byte(out), &sts); err != nil {
			t.Fatalf("fleet status: %v: %s", err, out)
		}
		return sts
	}
	worker := func(id string) *protocol.WorkerStatus {
		for _, st := range fleet() {
			if st.ID == id {
				return &st
			}
		}
		return nil
	}
	fleettest.Eventually(t, time.Minute, "the good host in fleet status", func() bool { return worker("tt-good") != nil })

	const runID = "broken-host-loses-nothing"
	matrix := filepath.Join(dir, "matrix.yaml")
	writeFile(t, matrix, fmt.Sprintf(`run: %s
defaults:
  pool: n150
  runner: tt-xla
  benchmark: {test: %q, model: resnet50, loop_count: 8, warmup_count: 2}
matrix:
  batch_size: [1, 2, 3, 4, 5, 6]
`, runID, harnesstest.XLAResNet50))
	if code, out, errOut := run(t, "submit", "--nats", srv.ClientURL(), "--store", storeURL, "--matrix", matrix, "--log-level", "warn"); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	// The broken host joins while the good host's two boards are busy.
	fleettest.Eventually(t, time.Minute, "the good host running two jobs", func() bool {
		st := worker("tt-good")
		if st == nil {
			return false
		}
		busy := 0
		for _, d := range st.Devices {
			if d.State == protocol.DeviceBusy {
				busy++
			}
		}
		return busy == 2
	})
	startWorkerBinary(t, broken, tmp)

	fleettest.Eventually(t, 3*time.Minute, "six results", func() bool {
		return len(queryRunByJob(t, storeURL, runID)) == 6
	})
	for id, r := range queryRunByJob(t, storeURL, runID) {
		if r.Status != protocol.StatusPassed || r.Worker.ID != "tt-good" {
			t.Errorf("job %s (batch %d): %s on %s attempt %d (%+v), want passed on tt-good",
				id, r.Benchmark.BatchSize, r.Status, r.Worker.ID, r.Attempt, r.Error)
		}
	}
	code, out, errOut := run(t, "dlq", "list", "--nats", srv.ClientURL(), "--format", "json")
	var dead []workers.DeadEntry
	if code != 0 || json.Unmarshal([]byte(out), &dead) != nil || len(dead) != 0 {
		t.Errorf("dlq list: exit %d, %s%s; want no dead letter", code, out, errOut)
	}

	// The broken host is out of service for tt-xla, every board of it,
	// saying why: in fleet status, as a user reads it.
	fleettest.Eventually(t, 30*time.Second, "the broken host out of service in fleet status", func() bool {
		st := worker("tt-broken")
		if st == nil || len(st.Devices) != 2 {
			return false
		}
		for _, d := range st.Devices {
			if d.State != protocol.DeviceQuarantined {
				return false
			}
		}
		return true
	})
	for _, d := range worker("tt-broken").Devices {
		if d.Runner != protocol.RunnerTTXLA || !strings.Contains(d.Reason, "host cannot run the harness") ||
			!strings.Contains(d.Reason, "3 jobs in a row") || !strings.Contains(d.Reason, "no health_probe configured") ||
			!strings.Contains(d.Reason, "ImportError while importing test module") {
			t.Errorf("tt-broken board %s (%s): reason %q; want it out of service for tt-xla, naming 3 jobs in a row, no probe and the import error",
				d.ID, d.Runner, d.Reason)
		}
	}
	_, table, _ := run(t, "fleet", "status", "--nats", srv.ClientURL())
	if !strings.Contains(table, "quarantined: out of service: host cannot run the harness: 3 jobs in a row") {
		t.Errorf("fleet status table does not say why tt-broken is out:\n%s", table)
	}
	// The good host stays in service.
	for _, d := range worker("tt-good").Devices {
		if d.State == protocol.DeviceQuarantined {
			t.Errorf("tt-good board %s out of service: %s", d.ID, d.Reason)
		}
	}
}

// queryRunByJob is the run's stored results by job id.
func queryRunByJob(t *testing.T, store, runID string) map[string]protocol.Result {
	t.Helper()
	code, stdout, stderr := run2(t, "results", "query", "--store", store, "--run", runID, "--format", "json")
	if code != 0 {
		t.Fatalf("results query: exit %d: %s", code, stderr)
	}
	var rs []protocol.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	out := map[string]protocol.Result{}
	for _, r := range rs {
		out[r.Job] = r
	}
	return out
}
