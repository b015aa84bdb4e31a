package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
)

// crashTest is a test module of a pull request's that crashes its own
// interpreter in the middle of its test (os._exit(3): pytest's internal
// error code, with none of pytest's output).
const crashTest = "forge/test/benchmark/test_crash.py::test_crash"

func withCrashTest(t *testing.T) *harnesstest.Checkout {
	t.Helper()
	c := harnesstest.NewCheckout(t, protocol.RunnerForge, "", false)
	mod := filepath.Join(c.Workdir, "forge", "test", "benchmark", "test_crash.py")
	if err := os.WriteFile(mod, []byte(`import os
import pytest


@pytest.mark.perf
def test_crash():
    print("test_crash: crashing my own interpreter", flush=True)
    os._exit(3)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// healthRecord reads a board's bench-health record.
func healthRecord(t *testing.T, f *ttFleet, workerID, dev string) protocol.DeviceHealth {
	t.Helper()
	var h protocol.DeviceHealth
	e, err := f.topo.Health.Get(t.Context(), protocol.HealthKey(workerID, dev))
	if err != nil {
		t.Fatalf("bench-health %s.%s: %v", workerID, dev, err)
	}
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// Four jobs that crash their own interpreter (os._exit(3)) under real
// pytest on one healthy board: each fails as the job's own fault (class
// job, naming the crash, one attempt), the board passes its check and
// the health probe after each, and it stays in service with no
// quarantine in bench-health; the next good job passes on it.
func TestJobsCrashingTheirInterpreterLeaveAHealthyBoardInService(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerForge, withCrashTest(t), nil)
	const id = "tt-crashes"
	w := f.start(t, id, host.slots)
	const run = "forge-own-crashes"
	var jobs []*protocol.Job
	for i := range 4 {
		jobs = append(jobs, harnessJob(t, run, protocol.RunnerForge, crashTest, 1, 4, map[string]string{"i": strconv.Itoa(i)}))
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	// Before the rule, the third crash in a row quarantined the board and
	// the jobs were retried, never recorded: stop as soon as either shows.
	fleettest.Eventually(t, 3*time.Minute, "four results, or the board out of service", func() bool {
		if w.Status().Devices[0].State == protocol.DeviceQuarantined {
			return true
		}
		rs, _, _ := index.QueryJSON(t.Context(), f.store, index.Filter{Run: run})
		return len(rs) == len(jobs)
	})
	if d := w.Status().Devices[0]; d.State == protocol.DeviceQuarantined {
		t.Fatalf("the healthy board left service for the jobs' own crashes: %s", d.Reason)
	}
	for _, r := range fleettest.Results(t, f.store, run) {
		if r.Status != protocol.StatusFailed || r.Error == nil || r.Error.Class != protocol.ClassJob || r.Attempt != 1 {
			t.Fatalf("result %s: %s attempt %d (%+v), want failed at attempt 1 with class %q", r.Job, r.Status, r.Attempt, r.Error, protocol.ClassJob)
		}
		if m := r.Error.Message; !strings.Contains(m, "the job crashed") || !strings.Contains(m, "status 3") ||
			!strings.Contains(m, "passed its check and the health probe") {
			t.Fatalf("result %s message %q: want the crash named and the board cleared", r.Job, m)
		}
	}
	h := healthRecord(t, f, id, "tt0")
	jobsSeen := 0
	for _, e := range h.Events {
		switch e.Kind {
		case protocol.HealthJob:
			jobsSeen++
		case protocol.HealthInfra, protocol.HealthHang, protocol.HealthReset, protocol.HealthQuarantine:
			t.Errorf("the board's history holds %s on %s: %+v", e.Kind, e.Job, h.Events)
		}
	}
	if h.Quarantined || jobsSeen != len(jobs) {
		t.Fatalf("bench-health: quarantined %v (%s), %d job events of %d", h.Quarantined, h.Reason, jobsSeen, len(jobs))
	}
	for _, c := range host.Calls(t) {
		if strings.HasPrefix(c, "tt-smi -r") {
			t.Fatalf("the board was reset for the jobs' own crashes: %q", host.Calls(t))
		}
	}
	const run2 = "forge-after-crashes"
	good := harnessJob(t, run2, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run2, protocol.PriorityNormal, []*protocol.Job{good})
	if r := f.results(t, run2, 1)[good.ID]; r.Status != protocol.StatusPassed || r.Device.ID != "tt0" {
		t.Fatalf("good job after the crashes: %s on %s (%+v)", r.Status, r.Device.ID, r.Error)
	}
}

// vanishing is a board's health whose board is gone from its second
// check on: it went with the crash of the job before it.
type vanishing struct {
	device.Health
	node   string
	checks atomic.Int32
}

func (v *vanishing) Check(ctx context.Context, dev device.Device) error {
	if v.checks.Add(1) == 2 {
		_ = os.Remove(v.node)
	}
	return v.Health.Check(ctx, dev)
}

// A crash after which the board fails its check is the board's fault, as
// before the rule: the board is reset, re-checked, still gone, and
// quarantined (in bench-health too); the job is handed back, not failed.
func TestCrashOnABoardThatFailsItsCheckAfterQuarantinesIt(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerForge, withCrashTest(t), nil)
	sl := host.slots[0]
	sl.Health = &vanishing{Health: sl.Health, node: filepath.Join(host.DevRoot, "0")}
	const id = "tt-crash-gone"
	w := f.start(t, id, []worker.Slot{sl})
	const run = "forge-crash-board-gone"
	j := harnessJob(t, run, protocol.RunnerForge, crashTest, 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, time.Minute, "the board quarantined", func() bool {
		return w.Status().Devices[0].State == protocol.DeviceQuarantined
	})
	if reason := w.Status().Devices[0].Reason; !strings.Contains(reason, "gone") {
		t.Fatalf("quarantined for %q, want the board gone", reason)
	}
	if h := healthRecord(t, f, id, "tt0"); !h.Quarantined {
		t.Fatalf("bench-health not quarantined: %+v", h)
	}
	if calls := host.Calls(t); !strings.Contains(strings.Join(calls, "\n"), "tt-smi -r "+bdf0) {
		t.Fatalf("tt-smi calls %q: the board was not reset", calls)
	}
	if rs, _, _ := index.QueryJSON(t.Context(), f.store, index.Filter{Run: run}); len(rs) != 0 {
		t.Fatalf("the job was recorded (%s, %+v): it was the board's fault and goes back for another board", rs[0].Status, rs[0].Error)
	}
}

// limitRunner is a runner whose box reports every job over a limit (as
// the sandbox does for pids.max, memory.max, a full room).
type limitRunner struct {
	limit string
	runs  atomic.Int32
}

func (r *limitRunner) Name() string                   { return protocol.RunnerForge }
func (r *limitRunner) Check(protocol.Benchmark) error { return nil }
func (r *limitRunner) Run(context.Context, *protocol.Job, device.Device, device.Recorder) (*device.Outcome, error) {
	r.runs.Add(1)
	return nil, device.JobFault(r.limit, "pids.max 512 reached: fork failed with EAGAIN")
}

// A job that hits a limit of its box (a *device.JobError with a Limit)
// fails by itself: a failed result naming the limit at its first attempt,
// no redelivery, and the board (its tt-smi check passing) stays in
// service however many do it.
func TestJobsOverTheirBoxLimitFailAndTheBoardStays(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHostWith(t, harnesstest.NewTTHost(t, 1), protocol.RunnerForge, harnesstest.NewCheckout(t, protocol.RunnerForge, "", false), nil)
	r := &limitRunner{limit: device.LimitPids}
	sl := host.slots[0]
	sl.Runner = r
	const id = "tt-limits"
	w := f.start(t, id, []worker.Slot{sl})
	const run = "forge-fork-bombs"
	var jobs []*protocol.Job
	for i := range 4 {
		jobs = append(jobs, harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, map[string]string{"i": strconv.Itoa(i)}))
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	for _, res := range f.results(t, run, len(jobs)) {
		if res.Status != protocol.StatusFailed || res.Error == nil || res.Error.Class != protocol.ClassJob || res.Attempt != 1 ||
			!strings.Contains(res.Error.Message, "the job hit its pids limit") || !strings.Contains(res.Error.Message, "pids.max 512") {
			t.Fatalf("result %s: %s attempt %d (%+v), want failed by the job's pids limit at attempt 1", res.Job, res.Status, res.Attempt, res.Error)
		}
	}
	if n := r.runs.Load(); n != int32(len(jobs)) {
		t.Fatalf("%d runs for %d jobs: a job over its limit was run again", n, len(jobs))
	}
	if d := w.Status().Devices[0]; d.State == protocol.DeviceQuarantined {
		t.Fatalf("the board left service for its jobs' limits: %s", d.Reason)
	}
	if h := healthRecord(t, f, id, "tt0"); h.Quarantined {
		t.Fatalf("bench-health quarantined: %s", h.Reason)
	}
}
