package cpu

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// peakEnv carries the job a child process of TestEstimateBoundsMeasuredPeak
// runs: "model format batch input_size".
const peakEnv = "BENCHFLEET_CPU_PEAK_JOB"

// TestEstimateBoundsMeasuredPeak runs small jobs, each in a fresh process,
// and checks that EstimateBytes is at least the growth of the process's
// peak resident memory (VmHWM after the run minus VmRSS before it) and at
// most 1.5 times it.
func TestEstimateBoundsMeasuredPeak(t *testing.T) {
	if spec := os.Getenv(peakEnv); spec != "" {
		measurePeakChild(t, spec)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	for _, spec := range []string{
		"resnet18 float32 1 32",   // weights dominate
		"resnet50 bfloat16 2 64",  // the largest weights
		"resnet18 bfloat16 16 96", // activations and GEMM scratch
		"mlp float32 64 4096",     // wide input
	} {
		t.Run(strings.ReplaceAll(spec, " ", "/"), func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestEstimateBoundsMeasuredPeak$")
			cmd.Env = append(os.Environ(), peakEnv+"="+spec)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			_, line, ok := strings.Cut(string(out), "PEAK ")
			var before, hwm int64
			if !ok {
				t.Fatalf("child printed no PEAK line:\n%s", out)
			}
			if _, err := fmt.Sscanf(line, "%d %d", &before, &hwm); err != nil {
				t.Fatalf("PEAK line %q: %v", line, err)
			}
			b := peakBenchmark(t, spec)
			est, err := EstimateBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			measured := hwm - before
			t.Logf("%s: measured %s, estimated %s (%.2f×)", spec, formatBytes(measured), formatBytes(est), float64(est)/float64(measured))
			if est < measured || float64(est) > 1.5*float64(measured) {
				t.Errorf("%s: estimate %d bytes, measured peak %d: want measured ≤ estimate ≤ 1.5 × measured", spec, est, measured)
			}
		})
	}
}

func peakBenchmark(t *testing.T, spec string) protocol.Benchmark {
	t.Helper()
	var model, format string
	var batch, size int
	if _, err := fmt.Sscanf(spec, "%s %s %d %d", &model, &format, &batch, &size); err != nil {
		t.Fatalf("spec %q: %v", spec, err)
	}
	return testJob(model, format, batch, 2, 1, size).Benchmark
}

// measurePeakChild runs the job of spec and prints its resident memory
// before and its peak after.
func measurePeakChild(t *testing.T, spec string) {
	b := peakBenchmark(t, spec)
	runtime.GC()
	debug.FreeOSMemory()
	before := procStatus(t, "VmRSS")
	job := testJob(b.Model, b.DataFormat, b.BatchSize, b.LoopCount, b.WarmupCount, b.InputSize)
	if _, err := newRunner(t).Run(t.Context(), job, device.Device{ID: "cpu-0"}, &recorder{}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("PEAK %d %d\n", before, procStatus(t, "VmHWM"))
}

// procStatus returns a "kB" field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestEstimateReplaysTheEngine checks the parts of the estimate that replay
// the engine's buffer pools against the pools of real runs: the
// executor's buffers and GEMM scratch after warmup and timed iterations
// (several chunks, the last one short), the golden path's tensors and
// accumulators after a batch.
func TestEstimateReplaysTheEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model       string
		size, batch int
	}{
		{ModelResNet18, 48, 1},
		{ModelResNet18, 160, 5}, // chunks of 3: 3 + 2
		{ModelResNet50, 32, 3},
		{ModelMLP, 96, 7},
	} {
		n, err := buildNetwork(tc.model, tc.size)
		if err != nil {
			t.Fatal(err)
		}
		const threads = 3
		fp := estimate(n, tc.batch, 1, threads)
		ex := newExecutor(compile(n, false), threads)
		in := make([]float32, tc.batch*n.inputLen())
		out := make([]float32, tc.batch*n.outputLen())
		for i := range 3 {
			fillInput(in, n, i)
			if err := ex.forward(t.Context(), in, tc.batch, out); err != nil {
				t.Fatal(err)
			}
		}
		var pooled int64
		for _, s := range ex.free {
			pooled += int64(cap(s))
		}
		scratch := int64(cap(ex.scratch.packedB) + len(ex.scratch.tiles)*mcBlock*ncBlock)
		var bufs refBuffers
		if _, err := referenceWith(t.Context(), n, in, tc.batch, threads, &bufs); err != nil {
			t.Fatal(err)
		}
		var golden int64
		for _, s := range bufs.free {
			golden += 4 * int64(cap(s))
		}
		for _, a := range bufs.accs {
			golden += 8 * int64(cap(a))
		}
		name := fmt.Sprintf("%s at %d, batch %d (chunks of %d)", tc.model, tc.size, tc.batch, ex.p.chunkSize(tc.batch))
		if 4*pooled != fp.activations || 4*scratch != fp.scratch || golden != fp.golden {
			t.Errorf("%s: engine holds activations %d, scratch %d, golden %d bytes; estimate %d, %d, %d",
				name, 4*pooled, 4*scratch, golden, fp.activations, fp.scratch, fp.golden)
		}
	}
}

// TestCheckBudget: a job whose estimate is over the budget is invalid, at
// submit (the registered kind's Check) and on the worker (the runner's),
// with a message naming the estimate, the limit and what to lower; the
// demo-sized jobs pass.
func TestCheckBudget(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	huge := protocol.Benchmark{Model: ModelResNet50, BatchSize: protocol.MaxBatchSize, LoopCount: 10, WarmupCount: 2,
		DataFormat: protocol.FormatBfloat16, InputSize: 1024}
	est, err := EstimateBytes(huge)
	if err != nil {
		t.Fatal(err)
	}
	if est < 48<<30 {
		t.Fatalf("EstimateBytes(resnet50, batch 4096 at 1024) = %s, want at least the 48 GiB of its input", formatBytes(est))
	}
	job := &protocol.Job{Pool: protocol.RunnerCPU, Runner: protocol.RunnerCPU, Benchmark: huge}
	for name, err := range map[string]error{"runner": r.Check(huge), "kind": device.CheckJob(job)} {
		if !device.IsInvalid(err) {
			t.Fatalf("%s Check(batch 4096 at 1024) = %v, want an *InvalidError", name, err)
		}
		for _, want := range []string{formatBytes(est), formatBytes(MaxJobBytes), "batch_size", "input_size"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s Check: %q does not name %q", name, err, want)
			}
		}
	}

	var demo []protocol.Benchmark
	for _, format := range []string{protocol.FormatBfloat16, protocol.FormatFloat32} {
		for batch := 1; batch <= 8; batch++ {
			demo = append(demo, protocol.Benchmark{Model: ModelResNet50, BatchSize: batch, LoopCount: 32, WarmupCount: 8, DataFormat: format, InputSize: 224})
		}
		demo = append(demo,
			protocol.Benchmark{Model: ModelResNet50, BatchSize: 1, LoopCount: 32, WarmupCount: 8, DataFormat: format},
			protocol.Benchmark{Model: ModelResNet18, BatchSize: 8, LoopCount: 32, WarmupCount: 8, DataFormat: format},
			protocol.Benchmark{Model: ModelMLP, BatchSize: 32, LoopCount: 64, WarmupCount: 8, DataFormat: format},
			protocol.Benchmark{Model: ModelMLP, BatchSize: 8, LoopCount: 32, WarmupCount: 8, DataFormat: format})
	}
	for _, b := range demo {
		job := &protocol.Job{Pool: protocol.RunnerCPU, Runner: protocol.RunnerCPU, Benchmark: b}
		if err := r.Check(b); err != nil {
			t.Errorf("runner Check(%+v) = %v", b, err)
		}
		if err := device.CheckJob(job); err != nil {
			t.Errorf("kind Check(%+v) = %v", b, err)
		}
	}
}

// TestHostBudget: the worker's budget is the smaller of MaxJobBytes and
// half the host's MemTotal; a small host also lowers what fits, and the
// message says so.
func TestHostBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mem, want int64
	}{
		{0, MaxJobBytes},        // unknown
		{64 << 30, MaxJobBytes}, // big host
		{4 << 30, 2 << 30},
	} {
		if got := hostBudget(tc.mem).bytes; got != tc.want {
			t.Errorf("hostBudget(%d) = %d, want %d", tc.mem, got, tc.want)
		}
	}
	b := protocol.Benchmark{Model: ModelResNet50, BatchSize: 64, LoopCount: 4, DataFormat: protocol.FormatFloat32, InputSize: 512}
	if err := checkBudget(b, 2, hostBudget(64<<30)); err != nil {
		t.Fatalf("on a 64 GiB host: %v", err)
	}
	err := checkBudget(b, 2, hostBudget(1<<30))
	if !device.IsInvalid(err) || !strings.Contains(err.Error(), "50% of this host's 1.0 GiB") || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("on a 1 GiB host: %v, want an *InvalidError naming the host's share and the batch that fits", err)
	}
	b.BatchSize, b.InputSize = 1, 1024
	if err := checkBudget(b, 2, hostBudget(1<<30)); !device.IsInvalid(err) || !strings.Contains(err.Error(), "lower input_size") {
		t.Fatalf("batch 1 at 1024 on a 1 GiB host: %v, want an *InvalidError saying to lower input_size", err)
	}

	meminfo := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemFree:  100 kB\nMemTotal:       24684084 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := memTotal(meminfo); got != 24684084<<10 {
		t.Errorf("memTotal = %d, want %d", got, int64(24684084)<<10)
	}
	if got := memTotal(filepath.Join(t.TempDir(), "none")); got != 0 {
		t.Errorf("memTotal(missing) = %d, want 0", got)
	}
}
