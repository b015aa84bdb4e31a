package cpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// recorder is a device.Recorder that keeps what a run reports.
type recorder struct {
	mu     sync.Mutex
	phases []string
	logs   []string
	onLog  func(string)
}

func (r *recorder) Phase(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, name)
}

func (r *recorder) Log(line string) {
	r.mu.Lock()
	r.logs = append(r.logs, line)
	f := r.onLog
	r.mu.Unlock()
	if f != nil {
		f(line)
	}
}

func (r *recorder) Artifact(name, path string) {}

func testJob(model, format string, batch, loop, warmup, size int) *protocol.Job {
	j := &protocol.Job{
		ID: "job-1", Run: "run-1", CreatedAt: time.Now(), Pool: protocol.RunnerCPU, Runner: protocol.RunnerCPU,
		Benchmark: protocol.Benchmark{Model: model, BatchSize: batch, LoopCount: loop, WarmupCount: warmup,
			DataFormat: format, InputSize: size},
	}
	j.Normalize()
	return j
}

func newRunner(t *testing.T) *Runner {
	t.Helper()
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRun(t *testing.T) {
	tests := []struct {
		model   string
		format  string
		batch   int
		size    int
		pccLo   float64
		pccHi   float64
		classes int
	}{
		{ModelResNet50, protocol.FormatFloat32, 2, 32, 0.9999, 1, classes},
		{ModelResNet50, protocol.FormatBfloat16, 2, 32, 0.98, 0.99999, classes},
		{ModelResNet18, protocol.FormatFloat32, 2, 48, 0.9999, 1, classes},
		{ModelResNet18, protocol.FormatBfloat16, 1, 48, 0.98, 0.99999, classes},
		{ModelMLP, protocol.FormatFloat32, 3, 256, 0.9999, 1, classes},
		{ModelMLP, protocol.FormatBfloat16, 3, 0, 0.98, 1, classes},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s/%d", tc.model, tc.format, tc.size), func(t *testing.T) {
			rec := &recorder{}
			job := testJob(tc.model, tc.format, tc.batch, 3, 1, tc.size)
			out, err := newRunner(t).Run(t.Context(), job, device.Device{ID: "cpu-0"}, rec)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{device.PhaseCompile, device.PhaseWarmup, device.PhaseTiming, device.PhasePCC}
			if fmt.Sprint(rec.phases) != fmt.Sprint(want) {
				t.Errorf("phases = %v, want %v", rec.phases, want)
			}
			m := out.Measurements
			if m.SamplesPerSec <= 0 || m.TotalSamples != int64(tc.batch*3) || m.TotalTimeS <= 0 {
				t.Errorf("measurements = %+v", m)
			}
			t.Logf("PCC = %.8f (1-PCC = %.3g), %.1f samples/s", out.PCCValue, 1-out.PCCValue, m.SamplesPerSec)
			if !(out.PCCValue >= tc.pccLo && out.PCCValue < tc.pccHi) {
				t.Errorf("PCC = %.8f, want in [%v, %v)", out.PCCValue, tc.pccLo, tc.pccHi)
			}
			logs := strings.Join(rec.logs, "\n")
			for _, s := range []string{"Iteration 0 took", "Total time:", "PCC:"} {
				if !strings.Contains(logs, s) {
					t.Errorf("log has no %q:\n%s", s, logs)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	ok := protocol.Benchmark{Model: ModelResNet50, BatchSize: 1, LoopCount: 1, WarmupCount: 1, DataFormat: protocol.FormatBfloat16}
	if err := r.Check(ok); err != nil {
		t.Fatalf("Check(valid) = %v", err)
	}
	bad := map[string]func(b *protocol.Benchmark){
		"unknown model":  func(b *protocol.Benchmark) { b.Model = "gpt5" },
		"training":       func(b *protocol.Benchmark) { b.Training = true },
		"tiny input":     func(b *protocol.Benchmark) { b.InputSize = 16 },
		"huge input":     func(b *protocol.Benchmark) { b.InputSize = 4096 },
		"negative input": func(b *protocol.Benchmark) { b.InputSize = -1 },
		"mlp too wide":   func(b *protocol.Benchmark) { b.Model, b.InputSize = ModelMLP, MaxMLPWidth+1 },
		"bad format":     func(b *protocol.Benchmark) { b.DataFormat = "int8" },
	}
	for name, mutate := range bad {
		b := ok
		mutate(&b)
		err := r.Check(b)
		if !device.IsInvalid(err) {
			t.Errorf("%s: Check = %v, want an *InvalidError", name, err)
		}
		if name == "training" && !strings.Contains(fmt.Sprint(err), "training is not supported") {
			t.Errorf("training: error %q does not say training is not supported", err)
		}
	}
	// Run rejects the same jobs before doing any work.
	job := testJob("nosuchmodel", protocol.FormatFloat32, 1, 1, 1, 0)
	if _, err := r.Run(t.Context(), job, device.Device{}, &recorder{}); !device.IsInvalid(err) {
		t.Fatalf("Run(unknown model) = %v, want an *InvalidError", err)
	}
}

func TestRunCancel(t *testing.T) {
	r := newRunner(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := &recorder{}
	// Cancel as soon as the timed loop has produced its first iteration.
	rec.onLog = func(line string) {
		if strings.HasPrefix(line, "Iteration 0 ") {
			cancel()
		}
	}
	job := testJob(ModelResNet18, protocol.FormatFloat32, 1, 1_000_000, 1, 64)
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, job, device.Device{}, rec)
		done <- err
	}()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	if rec.phases[len(rec.phases)-1] != device.PhaseTiming {
		t.Fatalf("phases = %v, want to stop in timing", rec.phases)
	}
}

// TestRunResNet50Full runs resnet50 at its real 224 size in both formats
// and checks the required PCC bands. It takes tens of seconds, so it only
// runs when BENCHFLEET_CPU_FULL=1.
func TestRunResNet50Full(t *testing.T) {
	if os.Getenv("BENCHFLEET_CPU_FULL") != "1" {
		t.Skip("set BENCHFLEET_CPU_FULL=1 to run resnet50 at 224")
	}
	for _, tc := range []struct {
		format string
		lo, hi float64
	}{{protocol.FormatBfloat16, 0.98, 0.99999}, {protocol.FormatFloat32, 0.9999, 1}} {
		rec := &recorder{onLog: func(s string) { t.Log(s) }}
		out, err := newRunner(t).Run(t.Context(), testJob(ModelResNet50, tc.format, 1, 4, 1, 224), device.Device{ID: "cpu-0"}, rec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: PCC %.8f (1-PCC %.3g), %.2f images/s", tc.format, out.PCCValue, 1-out.PCCValue, out.Measurements.SamplesPerSec)
		if !(out.PCCValue >= tc.lo && out.PCCValue < tc.hi) {
			t.Errorf("%s: PCC %.8f, want in [%v, %v)", tc.format, out.PCCValue, tc.lo, tc.hi)
		}
	}
}
