package worker_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

// A tt-xla host that cannot import the test module (torch without
// torch_xla: pytest exits 4 with "ImportError while importing test
// module" and "ERROR: not found") leaves service, and its jobs pass on a
// host that can, judged by the harness's own check (0.95 against
// resnet50's 0.90) and recording the batch the test ran, unless a job
// sets limits.pcc_min.
func TestTTXLAHostThatCannotImportLeavesServiceJobsPassElsewhere(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	env := map[string]string{"FAKE_XLA_LOOP": "4", "FAKE_PCC": "0.95"}
	broken := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerTTXLA, harnesstest.NewCheckoutMissing(t, "tt-xla", "", "torch_xla"), env)
	wb := f.start(t, "xla-broken", broken.slots)
	const run = "xla-broken-host"
	own := harnessJob(t, run, protocol.RunnerTTXLA, harnesstest.XLAResNet50, 16, 4, map[string]string{"judge": "harness"})
	strict := harnessJob(t, run, protocol.RunnerTTXLA, harnesstest.XLAResNet50, 16, 4, map[string]string{"judge": "job"})
	strict.Limits.PCCMin = 0.99
	strict.ID = protocol.JobID(run, strict.Cell())
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{own, strict})
	fleettest.Eventually(t, 30*time.Second, "the host that cannot import out of service", func() bool {
		d := wb.Status().Devices[0]
		return d.State == protocol.DeviceQuarantined
	})
	if reason := wb.Status().Devices[0].Reason; !strings.Contains(reason, "ImportError while importing test module") {
		t.Fatalf("reason %q does not name the test module's import error", reason)
	}
	healthy := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerTTXLA, harnesstest.NewCheckout(t, "tt-xla", "", false), env)
	f.start(t, "xla-healthy", healthy.slots)
	rs := f.results(t, run, 2)
	r := rs[own.ID]
	if r.Status != protocol.StatusPassed || r.Worker.ID != "xla-healthy" || r.PCC != (protocol.PCC{Value: 0.95, Min: 0.9, Passed: true}) {
		t.Fatalf("harness-judged result: %s by %s, pcc %+v (%+v)", r.Status, r.Worker.ID, r.PCC, r.Error)
	}
	if r.Measurements.BatchSize != 8 || r.Benchmark.BatchSize != 16 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "batch size 8") {
		t.Fatalf("batch ran %d of the job's %d, notes %q: want 8 of 16, said", r.Measurements.BatchSize, r.Benchmark.BatchSize, r.Notes)
	}
	s := rs[strict.ID]
	if s.Status != protocol.StatusFailed || s.PCC != (protocol.PCC{Value: 0.95, Min: 0.99}) {
		t.Fatalf("job-judged result: %s, pcc %+v, want failed at the job's 0.99", s.Status, s.PCC)
	}
}

// A job that prints pytest's conftest ImportError and exits 4 on a host
// whose probe passes (a pull request can do that) does not take the host
// out of service. It is the only host serving the pool, so the job fails
// on every host at its first delivery: dead-lettered as such, never run
// there again.
func TestJobClaimingABrokenHostDoesNotTakeItOutOfService(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	// The pull request's test module says the host is broken.
	c := evilCheckout(t)
	host := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerForge, c, nil)
	w := f.start(t, "tt-probed", host.slots)
	const run = "forge-false-host-fault"
	j := harnessJob(t, run, protocol.RunnerForge, "forge/test/benchmark/test_evil.py::test_x", 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, time.Minute, "the job dead-lettered", func() bool {
		st, err := f.js.Stream(t.Context(), protocol.StreamDead)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})
	st, err := f.js.Stream(t.Context(), protocol.StreamDead)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(t.Context(), protocol.DeadSubject("n150"))
	if err != nil {
		t.Fatal(err)
	}
	var dl protocol.DeadLetter
	if err := json.Unmarshal(m.Data, &dl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dl.Reason, "fails on every host") || !strings.Contains(dl.Reason, "(tt-probed)") ||
		!strings.Contains(dl.Reason, "the health probe passes") || dl.Attempts != 1 {
		t.Fatalf("dead letter after %d attempts: %q, want 'fails on every host' (tt-probed, the only one) with the passing probe after 1", dl.Attempts, dl.Reason)
	}
	if d := w.Status().Devices[0]; d.State == protocol.DeviceQuarantined {
		t.Fatalf("the host left service on the job's word: %+v", d)
	}
	// It still runs good jobs.
	good := harnessJob(t, run+"-good", protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run+"-good", protocol.PriorityNormal, []*protocol.Job{good})
	if r := f.results(t, run+"-good", 1)[good.ID]; r.Status != protocol.StatusPassed {
		t.Fatalf("good job after: %s (%+v)", r.Status, r.Error)
	}
}

// evilCheckout is a forge checkout with a test that prints what pytest
// prints for a conftest that cannot be imported, and exits 4: a job that
// only says its host is broken.
func evilCheckout(t *testing.T) *harnesstest.Checkout {
	t.Helper()
	c := harnesstest.NewCheckout(t, "forge", "", false)
	evil := filepath.Join(c.Workdir, "forge", "test", "benchmark", "test_evil.py")
	if err := os.WriteFile(evil, []byte(`import os, sys
print("\nImportError while loading conftest '/opt/tt-forge-onnx/forge/test/conftest.py'.", flush=True)
print("ModuleNotFoundError: No module named 'forge'", flush=True)
os._exit(4)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// With two hosts serving the pool, a job that says each host is broken
// runs once on each (a host never runs a job again that said so there)
// and is dead-lettered only after the second host said so too, naming
// both; its host-fault record is gone once it is dead-lettered, and
// neither host left service (their probes pass).
func TestJobSayingEveryHostIsBrokenRunsOncePerHost(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	var workers []*worker.Worker
	for _, id := range []string{"tt-a", "tt-b"} {
		host := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerForge, evilCheckout(t), nil)
		workers = append(workers, f.start(t, id, host.slots))
	}
	const run = "forge-evil-two-hosts"
	j := harnessJob(t, run, protocol.RunnerForge, "forge/test/benchmark/test_evil.py::test_x", 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	var dead protocol.Event
	fleettest.Eventually(t, 2*time.Minute, "the job dead-lettered", func() bool {
		evs := eventsOf(runEvents(t, f.js, run), j.ID, protocol.EventDead)
		if len(evs) == 1 {
			dead = evs[0]
		}
		return len(evs) == 1
	})
	if !strings.Contains(dead.Message, "fails on every host: 2 hosts (tt-a, tt-b)") {
		t.Fatalf("dead letter %q: want it to fail on every host, naming tt-a and tt-b", dead.Message)
	}
	claimed := map[string]int{}
	for _, e := range eventsOf(runEvents(t, f.js, run), j.ID, protocol.EventClaimed) {
		claimed[e.Worker]++
	}
	if claimed["tt-a"] != 1 || claimed["tt-b"] != 1 {
		t.Fatalf("the job ran %v times per host; want once on each", claimed)
	}
	if _, err := f.topo.Health.Get(t.Context(), protocol.HostFaultsKey(j.ID)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("host-fault record after the dead letter: %v; want none", err)
	}
	for _, w := range workers {
		if d := w.Status().Devices[0]; d.State == protocol.DeviceQuarantined {
			t.Fatalf("%s left service on the job's word: %+v", w.ID(), d)
		}
	}
}
