package harness

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// clockScan feeds lines to a scan whose clock advances by the given step
// before each line.
func clockScan(lines []string, steps []time.Duration) *Scan {
	t0 := time.Unix(1_000_000, 0)
	now := t0
	sc := newScanner(nopRecorder{}, t0, func() time.Time { return now }, 0)
	for i, l := range lines {
		now = now.Add(steps[i])
		sc.line(l)
	}
	return sc
}

// A harness that printed a warmup of 2 and a timed loop of 10 iterations
// of 300 ms each, as the worker's clock saw them.
func honestLoop() *Scan {
	var lines []string
	var steps []time.Duration
	add := func(l string, d time.Duration) { lines, steps = append(lines, l), append(steps, d) }
	add("Compiling ONNX model with Forge (m)...", time.Second)
	for i := range 2 {
		add("Iteration "+strconv.Itoa(i)+" took 100.0000 ms", 100*time.Millisecond)
	}
	add("Total time: 0.2000s for 2 iterations", time.Millisecond)
	add("Starting benchmark...", time.Millisecond)
	for i := range 10 {
		add("Iteration "+strconv.Itoa(i)+" took 300.0000 ms", 300*time.Millisecond)
	}
	add("Total time: 3.0000s for 10 iterations", time.Millisecond)
	return clockScan(lines, steps)
}

func TestVerifyChecksTheReportAgainstWhatTheWorkerSaw(t *testing.T) {
	t.Parallel()
	b := protocol.Benchmark{BatchSize: 8, LoopCount: 10}
	forge := Command{LoopFromJob: true}
	outcome := func(batch int, samples int64, secs float64) *device.Outcome {
		return &device.Outcome{Measurements: protocol.Measurements{BatchSize: batch, TotalSamples: samples, TotalTimeS: secs}}
	}
	for _, tc := range []struct {
		name string
		out  *device.Outcome
		b    protocol.Benchmark
		c    Command
		want string // "" = passes
	}{
		{"honest", outcome(8, 80, 3.0), b, forge, ""},
		{"the batch the harness chose", outcome(2, 20, 3.0), b, Command{}, ""},
		{"forged samples", outcome(8, 1, 3.0), b, forge, "total_samples 1 is not batch_size 8 × the 10 timed iterations"},
		{"tiny time", outcome(8, 80, 1e-9), b, forge, "total_time"},
		{"huge time", outcome(8, 80, 40), b, forge, "total_time"},
		{"another loop than the job's", outcome(8, 80, 3.0), protocol.Benchmark{BatchSize: 8, LoopCount: 128}, forge, "not the job's loop_count 128"},
		{"own loop", outcome(8, 80, 3.0), protocol.Benchmark{BatchSize: 8, LoopCount: 128}, Command{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(tc.out, tc.b, tc.c, honestLoop())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("verify: %v", err)
			case tc.want != "" && (err == nil || !device.IsBenchmark(err) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("verify: %v, want a benchmark failure naming %q", err, tc.want)
			}
		})
	}
	if err := verify(outcome(8, 80, 3.0), b, forge, scanLines("no loop here")); err == nil || !strings.Contains(err.Error(), "no timed loop") {
		t.Fatalf("no loop printed: %v", err)
	}
	if err := agreePCC(0.998765, 0.9987654); err != nil {
		t.Fatalf("rounding: %v", err)
	}
	if err := agreePCC(0.998765, 1); err == nil {
		t.Fatal("a report PCC of 1 against a printed 0.998765 agreed")
	}
}
