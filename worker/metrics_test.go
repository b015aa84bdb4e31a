package worker_test

import (
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/cpu"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

// A cpu job's result carries its figures as metrics, each with its unit
// and direction: samples/s (higher is better) and the median iteration
// (ms, lower is better), the same numbers as its measurements.
func TestCPUResultHasMetrics(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "metrics-w", 0)
	r, err := cpu.New(cpu.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Slots = append(cfg.Slots, worker.Slot{Device: device.Device{ID: "cpu-0", Pool: "cpu", Runner: "cpu", Chips: 1, Healthy: true}, Runner: r})
	fleettest.StartWorker(t, cfg)
	const run = "metrics-cpu"
	spec := submit.JobSpec{Pool: "cpu", Runner: "cpu", Benchmark: submit.BenchmarkSpec{Model: cpu.ModelMLP, BatchSize: 4, LoopCount: 5, WarmupCount: 1}}
	j, err := spec.Job(run, submit.SourceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	var res *protocol.Result
	fleettest.Eventually(t, 60*time.Second, "the cpu job's result", func() bool {
		res = fleettest.Results(t, f.store, run)[j.ID]
		return res != nil
	})
	if res.Status != protocol.StatusPassed {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	want := protocol.Metrics{
		protocol.MetricSamplesPerSec:  {Value: res.Measurements.SamplesPerSec, Unit: "samples/s", Better: protocol.HigherIsBetter},
		protocol.MetricIterationMSP50: {Value: res.Measurements.IterationMS.P50, Unit: "ms", Better: protocol.LowerIsBetter},
	}
	if len(res.Metrics) != len(want) {
		t.Fatalf("metrics %+v, want %+v", res.Metrics, want)
	}
	for n, w := range want {
		if got := res.Metrics[n]; got != w || !(got.Value > 0) {
			t.Errorf("metric %s: %+v, want %+v", n, got, w)
		}
	}
}

// A tt-xla vision job through real pytest on the upstream-shaped tree: its
// report writes evaluation_score 0.0 (tt-xla's vision_benchmark.py, a
// placeholder when nothing was evaluated), which is no metric; its metrics
// are samples/s and the median iteration.
func TestTTXLAVisionResultMetrics(t *testing.T) {
	t.Parallel()
	f := newTTFleet(t)
	host := newTTHost(t, 1, protocol.RunnerTTXLA, false, nil)
	f.start(t, "xla-metrics", host.slots)
	const run = "xla-metrics"
	j := harnessJob(t, run, protocol.RunnerTTXLA, harnesstest.XLAResNet50, 8, 4, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	r := f.results(t, run, 1)[j.ID]
	if r.Status != protocol.StatusPassed {
		t.Fatalf("status %s: %+v", r.Status, r.Error)
	}
	if _, ok := r.Metrics[protocol.MetricEvaluationScore]; ok || len(r.Metrics) != 2 ||
		r.Metrics[protocol.MetricSamplesPerSec].Value != r.Measurements.SamplesPerSec {
		t.Fatalf("metrics %+v, want samples_per_sec and iteration_ms_p50 only", r.Metrics)
	}
}
