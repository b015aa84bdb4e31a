package worker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/cpu"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

// A cpu job over the runner's memory budget (resnet50, batch 4096 at
// 1024: ~49 GiB), published raw so that submit's check never sees it, is
// dead-lettered as invalid with a failed result before the runner
// allocates anything; the worker stays up and its cpu slot runs the next
// job.
func TestCPUBudgetJobIsDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "cpubudget-w", 0)
	r, err := cpu.New(cpu.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Slots = []worker.Slot{{Device: device.Device{ID: "cpu-0", Pool: "cpu", Runner: "cpu", Chips: 1, Healthy: true}, Runner: r}}
	w := fleettest.StartWorker(t, cfg)

	publish := func(run string, b submit.BenchmarkSpec) *protocol.Job {
		t.Helper()
		j, err := submit.JobSpec{Pool: "cpu", Runner: "cpu", Benchmark: b}.Job(run, submit.SourceSpec{})
		if err != nil {
			t.Fatal(err)
		}
		j.CreatedAt = time.Now().UTC()
		payload, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.js.Publish(t.Context(), protocol.JobSubject("cpu", protocol.PriorityNormal), payload); err != nil {
			t.Fatal(err)
		}
		return j
	}
	const run = "cpubudget-1"
	huge := publish(run, submit.BenchmarkSpec{Model: cpu.ModelResNet50, BatchSize: protocol.MaxBatchSize, LoopCount: 4, InputSize: 1024})
	next := publish(run, submit.BenchmarkSpec{Model: cpu.ModelMLP, BatchSize: 2, LoopCount: 2, InputSize: 64})

	fleettest.Eventually(t, 60*time.Second, "results of both jobs", func() bool {
		return len(fleettest.Results(t, f.store, run)) == 2
	})
	results := fleettest.Results(t, f.store, run)
	if res := results[huge.ID]; res.Status != protocol.StatusFailed || res.Error == nil || res.Error.Class != protocol.ClassInvalid ||
		!strings.Contains(res.Error.Message, "needs an estimated") {
		t.Errorf("over-budget job: %s %+v, want failed/invalid naming the estimate", res.Status, res.Error)
	}
	if res := results[next.ID]; res.Status != protocol.StatusPassed {
		t.Errorf("next cpu job: %s %+v, want passed", res.Status, res.Error)
	}

	var dead []dlqEntry
	fleettest.Eventually(t, 10*time.Second, "the dead letter", func() bool {
		dead = f.dlqList(t)
		return len(dead) > 0
	})
	if len(dead) != 1 || dead[0].ID != huge.ID || dead[0].Pool != "cpu" || dead[0].Attempts != 1 ||
		!strings.HasPrefix(dead[0].Reason, "invalid job: ") || !strings.Contains(dead[0].Reason, "GiB") ||
		!strings.Contains(dead[0].Reason, "lower batch_size") {
		t.Fatalf("dead letters %+v, want one for %s (pool cpu, 1 attempt) naming the estimate and what to lower", dead, huge.ID)
	}
	select {
	case <-w.Done():
		t.Fatal("the worker stopped")
	default:
	}
}
