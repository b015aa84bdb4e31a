package worker_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// ttHost is a fake Tenstorrent host (harnesstest): n150 boards, tt-smi,
// and a harness runner over a fake checkout.
type ttHost struct {
	*harnesstest.TTHost
	slots []worker.Slot
}

func newTTHost(t *testing.T, nodes int, kind string, brokenEnv bool, env map[string]string, resetKills ...string) *ttHost {
	t.Helper()
	h := newTTHostWith(t, harnesstest.NewTTHost(t, nodes, resetKills...), kind, harnesstest.NewCheckout(t, kind, "", brokenEnv), env)
	if len(h.slots) != nodes || h.slots[0].Device.Visible != bdf0 {
		t.Fatalf("discovered %d boards, the first at %s; want %d, the first at %s", len(h.slots), h.slots[0].Device.Visible, nodes, bdf0)
	}
	return h
}

// probes are the known-good tests the fake hosts confirm a host fault with.
var probes = map[string]string{protocol.RunnerForge: harnesstest.ForgeResNet50, protocol.RunnerTTXLA: harnesstest.XLAResNet50}

// newTTHostWith serves the boards discovered on host with a harness
// runner of kind over checkout c, confirming host faults with its probe.
func newTTHostWith(t *testing.T, host *harnesstest.TTHost, kind string, c *harnesstest.Checkout, env map[string]string) *ttHost {
	t.Helper()
	h := &ttHost{TTHost: host}
	dcfg := device.DiscoverConfig{TTSMI: h.TTSMI, DevRoot: h.DevRoot, SysRoot: h.Sys}
	devs, err := device.Discover(t.Context(), dcfg)
	if err != nil || len(devs) == 0 {
		t.Fatalf("discovered %+v (%v), want boards", devs, err)
	}
	k, _ := device.Lookup(kind)
	r, err := k.New(device.Settings{Workdir: c.Workdir, Python: c.Python, Env: env, TempDir: t.TempDir(), HealthProbe: probes[kind]}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	health := device.NewTTHealth(dcfg)
	for _, d := range devs {
		d.Runner = kind
		h.slots = append(h.slots, worker.Slot{Device: d, Runner: r, Health: health})
	}
	return h
}

func harnessJob(t *testing.T, run, runner, test string, batch, loop int, labels map[string]string) *protocol.Job {
	t.Helper()
	spec := submit.JobSpec{Pool: "n150", Runner: runner, Labels: labels,
		Benchmark: submit.BenchmarkSpec{Test: test, Model: "resnet50", BatchSize: batch, LoopCount: loop}}
	j, err := spec.Job(run, submit.SourceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

type ttFleet struct {
	*fleettest.Fleet
	srv   string
	js    jetstream.JetStream
	topo  *topology.Handles
	tc    topology.Config
	store storage.Bucket
}

func newTTFleet(t *testing.T) *ttFleet {
	t.Helper()
	f := fleettest.New(t, fleettest.Options{AckWait: 10 * time.Second})
	return &ttFleet{Fleet: f, srv: f.URL, js: f.JS, topo: f.Topo, tc: f.Topology, store: f.Store}
}

func (f *ttFleet) start(t *testing.T, id string, slots []worker.Slot) *worker.Worker {
	t.Helper()
	cfg := f.WorkerConfig(t, id, slots)
	cfg.Backoff, cfg.MaxBackoff = 200*time.Millisecond, 0
	return fleettest.StartWorker(t, cfg)
}

func (f *ttFleet) results(t *testing.T, run string, n int) map[string]*protocol.Result {
	t.Helper()
	fleettest.Eventually(t, 3*time.Minute, "results", func() bool {
		rs, _, _ := index.QueryJSON(t.Context(), f.store, index.Filter{Run: run})
		return len(rs) == n
	})
	return fleettest.Results(t, f.store, run)
}

// A passing test gives a passed Result whose samples/sec is total_samples /
// total_time of the report, with both artifacts; a failed PCC assertion
// gives a failed Result carrying the harness's message.
func TestForgeSlotPassAndFailedTest(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	good := newTTHost(t, 1, protocol.RunnerForge, false, nil)
	f.start(t, "tt-host", good.slots)
	const run = "forge-run"
	pass := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 8, 32, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{pass})
	p := f.results(t, run, 1)[pass.ID]
	if p.Status != protocol.StatusPassed || p.Attempt != 1 {
		t.Fatalf("status %s attempt %d %+v", p.Status, p.Attempt, p.Error)
	}
	m := p.Measurements
	if m.TotalSamples != 256 || m.TotalTimeS <= 0 || m.SamplesPerSec != 256/m.TotalTimeS || m.IterationMS.Count != 32 {
		t.Fatalf("measurements %+v", m)
	}
	if p.PCC.Value != 0.998765 || !p.PCC.Passed || p.Device.Arch != "wormhole" {
		t.Fatalf("pcc %+v device %+v", p.PCC, p.Device)
	}
	// A forge vision job's metrics: samples/s and the median iteration,
	// each with its unit and direction; no LLM metric.
	if sps, p50 := p.Metrics[protocol.MetricSamplesPerSec], p.Metrics[protocol.MetricIterationMSP50]; len(p.Metrics) != 2 ||
		sps != (protocol.Metric{Value: m.SamplesPerSec, Unit: "samples/s", Better: protocol.HigherIsBetter}) ||
		p50 != (protocol.Metric{Value: m.IterationMS.P50, Unit: "ms", Better: protocol.LowerIsBetter}) || !(p50.Value > 0) {
		t.Fatalf("metrics %+v", p.Metrics)
	}
	names := map[string]protocol.Artifact{}
	for _, a := range p.Artifacts {
		names[a.Name] = a
		if ok, err := f.store.Exists(t.Context(), a.Key); err != nil || !ok || a.Size <= 0 || len(a.SHA256) != 64 {
			t.Errorf("artifact %+v not stored (%v)", a, err)
		}
	}
	for _, want := range []string{harness.ArtifactLog, harness.ArtifactReport} {
		if _, ok := names[want]; !ok {
			t.Errorf("artifact %s missing: %+v", want, p.Artifacts)
		}
	}
	if p.Upstream != names[harness.ArtifactReport].Key {
		t.Errorf("upstream %q, want the report's key %q", p.Upstream, names[harness.ArtifactReport].Key)
	}

	f2 := newTTFleet(t) // a fleet of its own, so the low-PCC host takes the job
	low := newTTHost(t, 1, protocol.RunnerForge, false, map[string]string{"FAKE_PCC": "0.41"})
	f2.start(t, "tt-host-low", low.slots)
	const run2 = "forge-low-pcc"
	j := harnessJob(t, run2, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	fleettest.Submit(t, f2.js, f2.topo, f2.store, run2, protocol.PriorityNormal, []*protocol.Job{j})
	failed := f2.results(t, run2, 1)[j.ID]
	if failed.Status != protocol.StatusFailed || failed.Error == nil || failed.Error.Class != protocol.ClassBenchmark ||
		!strings.Contains(failed.Error.Message, "Golden comparison failed (compare_with_golden). PCC=0.410000") {
		t.Fatalf("low PCC: status %s error %+v", failed.Status, failed.Error)
	}
}

// bdf0 is the PCI address harnesstest gives the board of node 0: the
// TT_VISIBLE_DEVICES value its slot sets, so the FAKE_HANG_DEVICES entry
// that hangs it, and the target of its reset.
const bdf0 = "0000:01:00.0"

// Two n150 boards; the harness hangs on board 0 (the job times out) and
// the reset leaves board 0 gone while tt-smi exits 0. `tt-smi -r <its
// BDF>` is called, board 0 is quarantined (and so in bench-workers, what `fleet
// status` reads), and the hung job passes on board 1 at its second attempt.
func TestHangResetsBoardQuarantinesItAndRetriesOnTheOther(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHost(t, 2, protocol.RunnerForge, false,
		map[string]string{"FAKE_HANG_DEVICES": bdf0, "FAKE_ITER_MS": "50"}, "0")
	w := f.start(t, "tt-hang", host.slots)
	fleettest.Eventually(t, 30*time.Second, "both boards' health read", func() bool {
		st := w.Status().Devices
		return st[0].Health != nil && st[1].Health != nil
	})
	const run = "forge-hang"
	// Three jobs of ~2 s, so board 0 takes one while board 1 runs the
	// others, however slowly board 0's slot starts on a loaded machine.
	var jobs []*protocol.Job
	for _, k := range []string{"a", "b", "c"} {
		j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 40, map[string]string{"k": k})
		// Far above a healthy run (~2 s) even under the race detector on a
		// loaded machine: only the hang on board 0 reaches it.
		j.Limits.Timeout = protocol.Duration(8 * time.Second)
		jobs = append(jobs, j)
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	rs := f.results(t, run, 3)
	var retried *protocol.Result
	for _, r := range rs {
		if r.Status != protocol.StatusPassed || r.Device.ID != "tt1" {
			t.Fatalf("result %s: %s on %s attempt %d (%+v), want passed on tt1", r.Job, r.Status, r.Device.ID, r.Attempt, r.Error)
		}
		if r.Attempt == 2 {
			retried = r
		}
	}
	if retried == nil {
		t.Fatalf("no job was retried: %+v", rs)
	}
	// The retry is handed back before board 0's reset and re-check end,
	// so board 1's result can land first: wait for the quarantine.
	fleettest.Eventually(t, 30*time.Second, "tt0 quarantined as gone", func() bool {
		st := w.Status().Devices
		return st[0].ID == "tt0" && st[0].State == protocol.DeviceQuarantined && strings.Contains(st[0].Reason, "gone")
	})
	if calls := host.Calls(t); !slices.Contains(calls, "tt-smi -r "+bdf0) {
		t.Fatalf("tt-smi calls %q: board 0 was not reset", calls)
	}
	fleettest.Eventually(t, 10*time.Second, "quarantine in bench-workers", func() bool {
		e, err := f.topo.Workers.Get(t.Context(), "tt-hang")
		return err == nil && strings.Contains(string(e.Value()), `"quarantined"`)
	})
}

// A board that hung on a job and came back from its reset does not take
// the same job back while another board of the pool is idle: the job
// passes on the other board, and board 0 stays in service.
func TestBoardThatFailedAJobPassesItToAnIdleBoard(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHost(t, 2, protocol.RunnerForge, false, map[string]string{"FAKE_HANG_DEVICES": bdf0, "FAKE_ITER_MS": "20"})
	w := f.start(t, "tt-pass-on", host.slots)
	fleettest.Eventually(t, 30*time.Second, "both boards' health read", func() bool {
		st := w.Status().Devices
		return st[0].Health != nil && st[1].Health != nil
	})
	const run = "forge-pass-on"
	// Three jobs of ~1 s (pytest start-up, 20 + 20 iterations of 20 ms): board 0 takes at least one (and hangs on it)
	// while board 1 runs the others, however slowly board 0's slot starts.
	// The hang's timeout leaves board 1 time to finish both even on a
	// loaded machine (-race, parallel tests, a harness slow to start):
	// were board 1 still busy when the hung job comes back, board 0 would
	// rightly run it again (no idle board to pass it to).
	var jobs []*protocol.Job
	for _, k := range []string{"a", "b", "c"} {
		j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 20, map[string]string{"k": k})
		j.Limits.Timeout = protocol.Duration(12 * time.Second)
		jobs = append(jobs, j)
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	// The hung job comes back after the retry backoff: tt1 claims it
	// (attempt 2), or tt0, back from its reset, claims it first and
	// passes it on without running it (attempt 3).
	for _, r := range f.results(t, run, 3) {
		if r.Status != protocol.StatusPassed || r.Device.ID != "tt1" || r.Attempt > 3 {
			t.Fatalf("result %s: %s on %s attempt %d, want passed on tt1", r.Job, r.Status, r.Device.ID, r.Attempt)
		}
	}
	fleettest.Eventually(t, 30*time.Second, "the hung board reset", func() bool {
		return slices.Contains(host.Calls(t), "tt-smi -r "+bdf0)
	})
	// tt0 ran the hung job once: one hang, one reset.
	resets := 0
	for _, c := range host.Calls(t) {
		if c == "tt-smi -r "+bdf0 {
			resets++
		}
	}
	if resets != 1 {
		t.Fatalf("tt0 reset %d times (calls %q), want once: it ran the job it had hung on again", resets, host.Calls(t))
	}
	if st := w.Status().Devices[0]; st.State == protocol.DeviceQuarantined {
		t.Fatalf("tt0 quarantined after one hang it recovered from: %+v", st)
	}
}

// A host whose conftest cannot be imported (the forge wheel is missing) is
// taken out of service with that reason; the jobs it claimed go back to the
// queue and pass on a healthy host.
func TestBrokenHarnessHostLeavesServiceJobsPassElsewhere(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	broken := newTTHost(t, 2, protocol.RunnerForge, true, nil)
	wb := f.start(t, "tt-broken", broken.slots)
	const run = "forge-broken-host"
	var jobs []*protocol.Job
	for i := range 4 {
		jobs = append(jobs, harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, map[string]string{"i": string(rune('0' + i))}))
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 30*time.Second, "the broken host out of service", func() bool {
		for _, d := range wb.Status().Devices {
			if d.State != protocol.DeviceQuarantined {
				return false
			}
		}
		return true
	})
	for _, d := range wb.Status().Devices {
		if !strings.Contains(d.Reason, "ImportError while loading conftest") {
			t.Fatalf("device %s reason %q does not name the conftest import error", d.ID, d.Reason)
		}
	}
	healthy := newTTHost(t, 1, protocol.RunnerForge, false, nil)
	f.start(t, "tt-healthy", healthy.slots)
	for _, r := range f.results(t, run, len(jobs)) {
		if r.Status != protocol.StatusPassed || r.Worker.ID != "tt-healthy" {
			t.Fatalf("result %s: %s by %s (%+v)", r.Job, r.Status, r.Worker.ID, r.Error)
		}
	}
	fleettest.Eventually(t, 10*time.Second, "the reason in bench-workers", func() bool {
		e, err := f.topo.Workers.Get(t.Context(), "tt-broken")
		return err == nil && strings.Contains(string(e.Value()), "ImportError while loading conftest")
	})
}

// A board quarantined by a worker is still quarantined after the worker
// restarts (bench-health keeps it), although its health check would pass
// again; `fleet release` (fleet.ReleaseBoard) returns it to service and
// it runs the next job. Its history counts the hang and the reset.
func TestQuarantineLastsUntilReleased(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHost(t, 1, protocol.RunnerForge, false, map[string]string{"FAKE_HANG_DEVICES": bdf0}, "0")
	w := f.start(t, "tt-lasting", host.slots)
	const run = "lasting-1"
	j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	j.Limits.Timeout = protocol.Duration(3 * time.Second)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, 30*time.Second, "tt0 quarantined", func() bool {
		return w.Status().Devices[0].State == protocol.DeviceQuarantined
	})
	// A record that is not quarantined but whose last event is the worker's
	// own (a reset written just before the quarantine arrives late) is no
	// release: the board stays out.
	own, _ := json.Marshal(protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: "tt-lasting", Device: "tt0", Pool: "n150",
		Events: []protocol.HealthEvent{{Time: time.Now().UTC(), Kind: protocol.HealthReset}}})
	if _, err := f.topo.Health.Put(t.Context(), protocol.HealthKey("tt-lasting", "tt0"), own); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st := w.Status().Devices[0]; st.State != protocol.DeviceQuarantined {
			t.Fatalf("the worker's own record released the board: %+v", st)
		}
	}
	w.Stop(t.Context())
	// Put the quarantine back as the worker had it (the write above
	// replaced the record).
	if _, err := fleet.ReleaseBoard(t.Context(), f.topo.Health, "tt-lasting", "tt0"); !errors.Is(err, fleet.ErrNotQuarantined) {
		t.Fatalf("release of a record the test overwrote: %v", err)
	}
	qrec, _ := json.Marshal(protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: "tt-lasting", Device: "tt0", Pool: "n150",
		Quarantined: true, Reason: "health check after reset: device node gone", Since: time.Now().UTC(),
		Events: []protocol.HealthEvent{{Time: time.Now().UTC(), Kind: protocol.HealthHang}, {Time: time.Now().UTC(), Kind: protocol.HealthReset},
			{Time: time.Now().UTC(), Kind: protocol.HealthQuarantine}}})
	if _, err := f.topo.Health.Put(t.Context(), protocol.HealthKey("tt-lasting", "tt0"), qrec); err != nil {
		t.Fatal(err)
	}

	// The board is back (someone reseated it) and a healthy harness is
	// installed: a fresh worker would find nothing wrong with it.
	if err := os.WriteFile(filepath.Join(host.DevRoot, "0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	good := newTTHost(t, 1, protocol.RunnerForge, false, nil)
	slots := []worker.Slot{{Device: host.slots[0].Device, Runner: good.slots[0].Runner, Health: host.slots[0].Health}}
	w2 := f.start(t, "tt-lasting", slots)
	fleettest.Eventually(t, 10*time.Second, "the restarted worker to read the board's health", func() bool {
		return w2.Status().Devices[0].Health != nil
	})
	st := w2.Status().Devices[0]
	if st.State != protocol.DeviceQuarantined || !strings.Contains(st.Reason, "fleet release tt-lasting tt0") {
		t.Fatalf("after restart: %+v, want still quarantined with how to release it", st)
	}
	if st.Health == nil || st.Health.Hangs < 1 || st.Health.Resets < 1 {
		t.Fatalf("history %+v, want the hang and the reset", st.Health)
	}

	if _, err := fleet.ReleaseBoard(t.Context(), f.topo.Health, "tt-lasting", "tt0"); err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 20*time.Second, "tt0 back in service", func() bool {
		return w2.Status().Devices[0].State == protocol.DeviceIdle
	})
	const run2 = "lasting-2"
	j2 := harnessJob(t, run2, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run2, protocol.PriorityNormal, []*protocol.Job{j2})
	if r := f.results(t, run2, 1)[j2.ID]; r.Status != protocol.StatusPassed || r.Device.ID != "tt0" {
		t.Fatalf("after release: %s on %s", r.Status, r.Device.ID)
	}
	if _, err := fleet.ReleaseBoard(t.Context(), f.topo.Health, "tt-lasting", "tt0"); !errors.Is(err, fleet.ErrNotQuarantined) {
		t.Fatalf("second release: %v, want ErrNotQuarantined", err)
	}
}
