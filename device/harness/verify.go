package harness

import (
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// Tolerances of the checks a harness's report must pass. The harness is
// the code under test: its report is checked against what the worker saw
// itself before a number from it is recorded.
const (
	// TimeTolerance, MinTimeFraction and TimeSlack bound how far the
	// report's total_time may lie outside the timed loop the worker's
	// clock saw (from the arrival of the loop's printed lines,
	// TimedWindow): at most most×(1+TimeTolerance)+TimeSlack, at least
	// least×MinTimeFraction−TimeSlack. A line arrives when the worker
	// reads it, never before it was printed, so most (from the process's
	// start) is a sound bound; least (between the first and last timed
	// lines' arrival) grows by any stall of the reader on a loaded host
	// (seen: 490 ms of arrivals for a 117 ms loop), so the lower bound
	// only catches a report that claims a fraction of the loop. A real
	// board's timed loop lasts seconds.
	//
	// The timed loop's Iteration lines must also agree with their own
	// arrival: the times they claim after the first line add up to at most
	// the span of their arrival ×(1+TimeTolerance)+TimeSlack. A line
	// arrives after it was printed, so a reader that stalls can only
	// shorten that span by its delay on the first line (TimeSlack covers
	// it) and lengthen it otherwise; lines held back and printed in one
	// burst arrive within moments while claiming the whole loop, and fail.
	// Without this, least is about 0 for a burst and the lower bound goes
	// negative: the report could claim any speed.
	TimeTolerance   = 0.25
	MinTimeFraction = 0.25
	TimeSlack       = 250 * time.Millisecond
	// SumTolerance bounds how far the report's total_time may fall below
	// the sum of the timed loop's printed iteration times: the harness
	// times the whole loop around them, so only rounding of the printed
	// figures (tt-xla prints four significant digits) and a millisecond
	// allow it below.
	SumTolerance = 0.01
	// PCCTolerance bounds the difference between the PCC a harness
	// printed (six decimals) and the one in its report.
	PCCTolerance = 1e-6
)

// ranBatch is the batch a run's timed loop ran: its report's, or the
// job's when the report has none.
func ranBatch(out *device.Outcome, b protocol.Benchmark) int {
	if out.Measurements.BatchSize > 0 {
		return out.Measurements.BatchSize
	}
	return b.BatchSize
}

// verify checks a passed run's outcome against what the harness printed
// and the worker's clock saw: total_samples must be the batch that ran
// times the timed loop's iterations (the job's loop_count when the
// harness runs it); the timed loop must have printed one Iteration line
// per iteration, as it ran (not held back for a burst: see TimeSlack);
// total_time must be at least the sum of the printed iteration times and
// agree with the timed loop's window. The error is a
// *device.BenchmarkError naming the disagreement.
func verify(out *device.Outcome, b protocol.Benchmark, c Command, sc *Scan) error {
	printed, n, ok := sc.TimedTotal()
	least, most, _ := sc.TimedWindow()
	if !ok || n <= 0 {
		return device.Failed("the harness printed no timed loop (\"Total time: ...s for N iterations\"): its report's figures are unconfirmed")
	}
	if c.LoopFromJob && n != b.LoopCount {
		return device.Failed("the harness's timed loop ran %d iterations, not the job's loop_count %d", n, b.LoopCount)
	}
	batch := ranBatch(out, b)
	if want := int64(batch) * int64(n); out.Measurements.TotalSamples != want {
		return device.Failed("the report's total_samples %d is not batch_size %d × the %d timed iterations printed (%d)",
			out.Measurements.TotalSamples, batch, n, want)
	}
	// Every timed iteration printed its line with its time, and the lines
	// came as the loop ran, not in a burst after it.
	lines, sum, afterFirst, _ := sc.TimedClaims()
	if lines != n {
		return device.Failed("the harness printed %d Iteration lines with a time for the %d timed iterations of its Total line: its figures are unconfirmed", lines, n)
	}
	if limit := time.Duration(float64(least)*(1+TimeTolerance)) + TimeSlack; afterFirst > limit {
		return device.Failed("the timed loop's %d Iteration lines claim %s from the first to the last, but reached the worker within %s (at most %s allowed): they were held back and printed in a burst, so they do not show the loop that ran; the report is inconsistent",
			lines, afterFirst.Round(time.Microsecond), least.Round(time.Microsecond), limit.Round(time.Microsecond))
	}
	total := time.Duration(out.Measurements.TotalTimeS * float64(time.Second))
	if floor := time.Duration(float64(sum)*(1-SumTolerance)) - time.Millisecond; total < floor {
		return device.Failed("the report's total_time %s is less than the %s its %d printed iteration times add up to",
			total.Round(time.Microsecond), sum.Round(time.Microsecond), lines)
	}
	lo := time.Duration(float64(least)*MinTimeFraction) - TimeSlack
	hi := time.Duration(float64(most)*(1+TimeTolerance)) + TimeSlack
	if total < lo || total > hi {
		return device.Failed("the report's total_time %s disagrees with the timed loop the worker saw (%s to %s between its printed lines; allowed %s to %s), printed total %gs",
			total.Round(time.Microsecond), least.Round(time.Microsecond), most.Round(time.Microsecond),
			max(lo, 0).Round(time.Microsecond), hi.Round(time.Microsecond), printed)
	}
	return nil
}

// agreePCC checks that the PCC a harness printed and the one its report
// holds are the same check's.
func agreePCC(printed, reported float64) error {
	if d := printed - reported; d > PCCTolerance || d < -PCCTolerance {
		return device.Failed("the harness printed PCC %v but its report says %v", printed, reported)
	}
	return nil
}
