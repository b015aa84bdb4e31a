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

// timedLoop is a run as the worker's clock saw it: a compile, a warmup of
// 4 × 10 ms printed as it ran, then silence for gap and the timed loop's n
// Iteration lines, the i-th arriving arrive(i) after the one before, each
// claiming ms, and its Total line claiming total seconds for n iterations
// (claimN instead, when given).
func timedLoop(n int, ms float64, gap time.Duration, arrive func(i int) time.Duration, total float64, claimN ...int) *Scan {
	var lines []string
	var steps []time.Duration
	add := func(l string, d time.Duration) { lines, steps = append(lines, l), append(steps, d) }
	add("Compiling ONNX model with Forge (m)...", time.Second)
	for i := range 4 {
		add("Iteration "+strconv.Itoa(i)+" took 10.0000 ms", 10*time.Millisecond)
	}
	add("Total time: 0.0400s for 4 iterations", time.Millisecond)
	add("Starting benchmark...", time.Millisecond)
	for i := range n {
		d := arrive(i)
		if i == 0 {
			d += gap
		}
		add("Iteration "+strconv.Itoa(i)+" took "+strconv.FormatFloat(ms, 'f', 4, 64)+" ms", d)
	}
	if len(claimN) > 0 {
		n = claimN[0]
	}
	add("Total time: "+strconv.FormatFloat(total, 'f', 4, 64)+"s for "+strconv.Itoa(n)+" iterations", time.Millisecond)
	return clockScan(lines, steps)
}

// A timed loop whose Iteration lines all arrive at once (held back, then
// printed in one burst at the end) cannot vouch for the times they claim:
// the job fails as an inconsistent report, whatever total_time it gives.
// Honest runs pass: a fast loop (whose lines come close together because
// the loop is fast), output arriving in small groups, a reader that
// stalled at the loop's start. A report below the sum of its own printed
// iteration times fails too.
func TestVerifyRefusesABurstOfIterationLines(t *testing.T) {
	t.Parallel()
	paced := func(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }
	burst := func(i int) time.Duration { return 20 * time.Microsecond }
	// Groups of 8 lines: the first of each after the 8 iterations it ends.
	grouped := func(i int) time.Duration {
		if i%8 == 0 {
			return 80 * time.Millisecond
		}
		return 0
	}
	// The reader stalls 200 ms at the loop's start, then catches up on the
	// 20 lines that piled up, then keeps pace.
	stalled := func(i int) time.Duration {
		switch {
		case i == 0:
			return 210 * time.Millisecond
		case i < 20:
			return 0
		}
		return 10 * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sc     *Scan
		n      int
		report float64 // the report's total_time, seconds
		want   string  // "" = passes
	}{
		{"honest", timedLoop(100, 10, 0, paced(10*time.Millisecond), 1.002), 100, 1.002, ""},
		{"fast honest loop", timedLoop(32, 1, 0, paced(time.Millisecond), 0.033), 32, 0.033, ""},
		{"a very fast loop", timedLoop(128, 0.05, 0, paced(50*time.Microsecond), 0.0066), 128, 0.0066, ""},
		{"lines in groups of 8", timedLoop(100, 10, 0, grouped, 1.002), 100, 1.002, ""},
		{"a reader that stalled at the start", timedLoop(100, 10, 0, stalled, 1.002), 100, 1.002, ""},
		{"burst after the real loop", timedLoop(100, 10, 5*time.Second, burst, 1.0), 100, 1.0, "burst"},
		{"burst claiming any speed", timedLoop(100, 10, 5*time.Second, burst, 1.0), 100, 0.001, "burst"},
		{"burst of slow iterations", timedLoop(16, 300, 5*time.Second, burst, 4.8), 16, 4.8, "burst"},
		{"report below its own iterations", timedLoop(100, 10, 0, paced(10*time.Millisecond), 1.002), 100, 0.5, "add up to"},
		{"fewer lines than iterations", timedLoop(1, 10, 5*time.Second, burst, 1.0, 100), 100, 0.01, "printed 1 Iteration line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := protocol.Benchmark{BatchSize: 1, LoopCount: tc.n}
			out := &device.Outcome{Measurements: protocol.Measurements{BatchSize: 1, TotalSamples: int64(tc.n), TotalTimeS: tc.report}}
			err := verify(out, b, Command{LoopFromJob: true}, tc.sc)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("verify: %v", err)
			case tc.want != "" && (err == nil || !device.IsBenchmark(err) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("verify: %v, want a benchmark failure naming %q", err, tc.want)
			}
		})
	}
}
