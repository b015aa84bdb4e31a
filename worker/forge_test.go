package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/forge"
	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

// forgeHost is a fake Tenstorrent host: device nodes under a temp dev root,
// a stand-in tt-smi that reports the nodes still there, and the forge runner
// pointed at a stand-in harness.
type forgeHost struct {
	devRoot string
	slots   []worker.Slot
}

func newForgeHost(t *testing.T, nodes int, breakDevice string) *forgeHost {
	t.Helper()
	dir := t.TempDir()
	devRoot := filepath.Join(dir, "dev")
	if err := os.MkdirAll(devRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		if err := os.WriteFile(filepath.Join(devRoot, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testdata, _ := filepath.Abs("testdata")
	ttsmi := filepath.Join(dir, "tt-smi")
	script := fmt.Sprintf("#!/bin/sh\nFAKE_DEV_ROOT=%q exec %q \"$@\"\n", devRoot, filepath.Join(testdata, "fake-tt-smi"))
	if err := os.WriteFile(ttsmi, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dcfg := device.DiscoverConfig{TTSMI: ttsmi, DevRoot: devRoot, SysRoot: filepath.Join(dir, "sys")}
	devs, err := device.Discover(t.Context(), dcfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != nodes {
		t.Fatalf("discovered %d devices, want %d: %+v", len(devs), nodes, devs)
	}
	workdir := t.TempDir()
	r, err := forge.New(forge.Config{Workdir: workdir, Python: filepath.Join(testdata, "fake-python"), TempDir: t.TempDir(),
		KillGrace: time.Second, Env: map[string]string{"FAKE_BREAK_DEVICE": breakDevice, "FAKE_DEV_ROOT": devRoot}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	h := &forgeHost{devRoot: devRoot}
	health := device.NewTTHealth(dcfg)
	for _, d := range devs {
		d.Runner = protocol.RunnerForge
		h.slots = append(h.slots, worker.Slot{Device: d, Runner: r, Health: health})
	}
	return h
}

func forgeJob(t *testing.T, run, test string, batch, loop int) *protocol.Job {
	t.Helper()
	spec := producer.JobSpec{Pool: "n150", Runner: "forge",
		Benchmark: producer.BenchmarkSpec{Test: test, Model: "resnet50", BatchSize: batch, LoopCount: loop}}
	j, err := spec.Job(run, producer.SourceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A worker with a forge slot and a stand-in harness: a passing test gives a
// passed Result whose samples/sec is total_samples / total_time of the
// report, with the report and the log kept as artifacts; a test that writes
// no report gives a failed Result with the reason.
func TestForgeSlotPassAndMissingReport(t *testing.T) {
	t.Parallel()
	host := newForgeHost(t, 1, "none")
	srv := testfleet.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	store := newStore(t)
	nc, _ := testfleet.Connect(t, srv.ClientURL())
	_, js := testfleet.Connect(t, srv.ClientURL())
	topo := testfleet.Topology(t, js, tc)
	testfleet.StartWorker(t, worker.Config{ID: "tt-host", Conn: nc, Store: store, Slots: host.slots, Topology: tc,
		IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})

	const run = "forge-run"
	pass := forgeJob(t, run, "forge/test/benchmark/test_vision.py::test_resnet50", 8, 32)
	nofile := forgeJob(t, run, "forge/test/benchmark/test_vision.py::test_resnet50_nofile", 8, 32)
	testfleet.Submit(t, js, topo, store, run, protocol.PriorityNormal, []*protocol.Job{pass, nofile})
	testfleet.Eventually(t, 60*time.Second, "two results", func() bool {
		rs, _, _ := storage.QueryJSON(t.Context(), store, storage.Filter{Run: run})
		return len(rs) == 2
	})
	rs := testfleet.Results(t, store, run)

	p := rs[pass.ID]
	if p.Status != protocol.StatusPassed {
		t.Fatalf("pass: status %s %+v", p.Status, p.Error)
	}
	// The stand-in reports total_samples = 8*32 and total_time = 32*0.004 s.
	wantSamples, wantTime := 256.0, 0.128
	if p.Measurements.TotalSamples != 256 || p.Measurements.TotalTimeS != wantTime ||
		p.Measurements.SamplesPerSec != wantSamples/wantTime {
		t.Fatalf("measurements %+v, want samples/sec %v = %v / %v", p.Measurements, wantSamples/wantTime, wantSamples, wantTime)
	}
	if p.PCC.Value != 0.9934 || !p.PCC.Passed || p.Device.Arch != "wormhole" {
		t.Fatalf("pcc %+v device %+v", p.PCC, p.Device)
	}
	names := map[string]protocol.Artifact{}
	for _, a := range p.Artifacts {
		names[a.Name] = a
		if ok, err := store.Exists(t.Context(), a.Key); err != nil || !ok || a.Size <= 0 || len(a.SHA256) != 64 {
			t.Errorf("artifact %+v not stored (%v)", a, err)
		}
	}
	for _, want := range []string{forge.ArtifactLog, forge.ArtifactReport} {
		if _, ok := names[want]; !ok {
			t.Errorf("artifact %s missing: %+v", want, p.Artifacts)
		}
	}
	if p.Upstream != names[forge.ArtifactReport].Key {
		t.Errorf("upstream %q, want the report's key %q", p.Upstream, names[forge.ArtifactReport].Key)
	}

	f := rs[nofile.ID]
	if f.Status != protocol.StatusFailed || f.Error == nil || f.Error.Class != protocol.ClassBenchmark {
		t.Fatalf("missing report: status %s error %+v", f.Status, f.Error)
	}
	if !strings.Contains(f.Error.Message, "AssertionError: PCC check failed") {
		t.Fatalf("missing report: the reason does not carry the log tail: %q", f.Error.Message)
	}
}

// A device whose job breaks it, and whose reset "succeeds" while the device
// node stays gone, is quarantined (and shown so in the heartbeat); the job
// goes to the other device and passes.
func TestForgeResetThatLiesQuarantinesDevice(t *testing.T) {
	t.Parallel()
	host := newForgeHost(t, 2, "0")
	srv := testfleet.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	store := newStore(t)
	nc, _ := testfleet.Connect(t, srv.ClientURL())
	_, js := testfleet.Connect(t, srv.ClientURL())
	topo := testfleet.Topology(t, js, tc)

	// Only tt0 serves at first, so the job lands on the device that breaks.
	w0 := testfleet.StartWorker(t, worker.Config{ID: "host-a", Conn: nc, Store: store, Slots: host.slots[:1], Topology: tc,
		Backoff: 100 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	const run = "forge-quarantine"
	job := forgeJob(t, run, "forge/test/benchmark/test_vision.py::test_resnet50", 1, 8)
	testfleet.Submit(t, js, topo, store, run, protocol.PriorityNormal, []*protocol.Job{job})
	testfleet.Eventually(t, 60*time.Second, "tt0 quarantined", func() bool {
		return w0.Status().Devices[0].State == protocol.DeviceQuarantined
	})
	st := w0.Status().Devices[0]
	if !strings.Contains(st.Reason, "gone") {
		t.Errorf("quarantine reason %q does not say the device is gone", st.Reason)
	}
	// fleet status reads the heartbeat bucket: it shows the quarantine.
	testfleet.Eventually(t, 10*time.Second, "quarantine in bench-workers", func() bool {
		e, err := topo.Workers.Get(t.Context(), "host-a")
		return err == nil && strings.Contains(string(e.Value()), `"quarantined"`)
	})

	nc2, _ := testfleet.Connect(t, srv.ClientURL())
	testfleet.StartWorker(t, worker.Config{ID: "host-b", Conn: nc2, Store: store, Slots: host.slots[1:], Topology: tc,
		Backoff: 100 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	testfleet.Eventually(t, 60*time.Second, "the job's result", func() bool {
		rs, _, _ := storage.QueryJSON(t.Context(), store, storage.Filter{Run: run})
		return len(rs) == 1
	})
	r := testfleet.Results(t, store, run)[job.ID]
	if r.Status != protocol.StatusPassed || r.Device.ID != "tt1" || r.Attempt != 2 {
		t.Fatalf("result: status %s device %s attempt %d, want passed on tt1 at attempt 2", r.Status, r.Device.ID, r.Attempt)
	}
}
