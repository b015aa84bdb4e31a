package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A forged `passed` event for a job that no worker ran (a producer may
// publish on bench.events.>) never makes `submit --wait --gate --junit`
// pass: the verdict comes from stored results, and there is none.
func TestForgedPassedEventDoesNotPass(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	dir := t.TempDir()
	store, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	const run = "forged-1"
	junitPath := filepath.Join(t.TempDir(), "junit.xml")

	// The forger: as soon as the run is submitted, publish a terminal
	// `passed` event for each of its jobs (no worker runs).
	forged := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			m, err := runstate.GetManifest(t.Context(), topo.Runs, run)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for _, j := range m.Jobs {
				data, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: run, Job: j.ID, Time: time.Now().UTC(),
					Kind: protocol.EventPassed, Status: protocol.StatusPassed, SamplesPerSec: 1000, PCC: 0.999,
					Result: storage.ResultKey(m.CreatedAt, run, j.ID)})
				if _, err := js.Publish(t.Context(), protocol.EventSubject(run, j.ID), data); err != nil {
					forged <- err
					return
				}
			}
			forged <- nil
			return
		}
		forged <- os.ErrDeadlineExceeded
	}()
	code, out, errOut := ciRun(t, "submit", "--nats", srv.ClientURL(), "--store", "file://"+dir, "--log-level", "warn",
		"--pool", "sim", "--model", "simnet", "--batch-size", "4", "--loop-count", "8", "--run", run,
		"--wait", "--timeout", "3s", "--gate", "--junit", junitPath)
	if err := <-forged; err != nil {
		t.Fatalf("forging: %v", err)
	}
	if code == ExitOK {
		t.Fatalf("a forged event passed the run: exit 0\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
	if code != ExitTimeout {
		t.Errorf("exit %d, want %d (no result ever arrives)\n%s%s", code, ExitTimeout, out, errOut)
	}
	if strings.Contains(out, "gate PASS") {
		t.Errorf("gate PASS printed for a run without results:\n%s", out)
	}
	// A timed-out wait still writes its JUnit report: a missing file fails.
	data, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatalf("the JUnit report: %v", err)
	}
	if !strings.Contains(string(data), "<failure") && !strings.Contains(string(data), "<error") {
		t.Errorf("JUnit shows no failure for a job without a result:\n%s", data)
	}
}
