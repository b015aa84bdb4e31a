package device

import (
	"math"
	"slices"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Measure turns the per-iteration durations of a timed loop into the
// Result's measurements: total_samples = batch × iterations, total_time =
// the sum, samples/sec = total_samples / total_time, and latency statistics.
func Measure(batch int, iters []time.Duration) protocol.Measurements {
	var m protocol.Measurements
	if len(iters) == 0 {
		return m
	}
	var total time.Duration
	for _, d := range iters {
		total += d
	}
	m.TotalSamples = int64(batch) * int64(len(iters))
	m.TotalTimeS = total.Seconds()
	if m.TotalTimeS > 0 {
		m.SamplesPerSec = float64(m.TotalSamples) / m.TotalTimeS
	}
	m.IterationMS = IterationStats(iters)
	return m
}

// IterationStats summarizes latencies in milliseconds (nearest-rank
// percentiles, population standard deviation).
func IterationStats(iters []time.Duration) protocol.IterationMS {
	if len(iters) == 0 {
		return protocol.IterationMS{}
	}
	ms := make([]float64, len(iters))
	var sum float64
	for i, d := range iters {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	slices.Sort(ms)
	mean := sum / float64(len(ms))
	var ss float64
	for _, v := range ms {
		ss += (v - mean) * (v - mean)
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ms)))) - 1
		return ms[max(0, min(i, len(ms)-1))]
	}
	return protocol.IterationMS{
		Count: len(ms), Min: ms[0], P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms[len(ms)-1],
		Mean: mean, Stddev: math.Sqrt(ss / float64(len(ms))),
	}
}
