// Package chart draws results over time, the one drawing of a series
// chart: `results trend`'s SVG (WriteTrendSVG, a panel per model), the
// HTML report around it (WriteReportHTML) and the dashboard's series page
// (SeriesSVG, one series with the gate's baseline and noise band). Both
// pictures draw their plots with the same code (plot.go): the axes fitted
// to the passed values, the ticks, and the markers of points that did not
// pass.
package chart

import (
	"fmt"
	"sort"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
)

// Metric is a figure of a Result that a trend can plot.
type Metric string

// The metrics a trend can plot.
const (
	MetricSamplesPerSec Metric = "samples_per_sec"
	MetricPCC           Metric = "pcc"
	MetricP50           Metric = "p50_ms"
)

// Metrics lists every Metric, in the order help texts show them.
var Metrics = []Metric{MetricSamplesPerSec, MetricPCC, MetricP50}

// ParseMetric reads a metric name; the error lists the valid ones.
func ParseMetric(s string) (Metric, error) {
	for _, m := range Metrics {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown metric %q: want samples_per_sec, pcc or p50_ms", s)
}

// Of is the metric's value in r.
func (m Metric) Of(r *protocol.Result) float64 {
	switch m {
	case MetricPCC:
		return r.PCC.Value
	case MetricP50:
		return r.Measurements.IterationMS.P50
	default:
		return r.Measurements.SamplesPerSec
	}
}

// Label is the axis label of the metric.
func (m Metric) Label() string {
	switch m {
	case MetricPCC:
		return "PCC"
	case MetricP50:
		return "p50 iteration (ms)"
	default:
		return "samples/sec"
	}
}

// TrendLine is one series of a trend: its results, oldest first.
type TrendLine struct {
	Series gate.Series
	// Name is the series' display name (Series.Name), with the runner and
	// test added when two series would otherwise share a name.
	Name    string
	Results []*protocol.Result
}

// TrendLines groups rs by series (sorted like Compare's series) and orders
// each series' results by run creation time, then run and job.
func TrendLines(rs []*protocol.Result) []TrendLine {
	g, order := gate.GroupSeries(rs)
	count := map[string]int{}
	for _, s := range order {
		count[s.Name()]++
	}
	lines := make([]TrendLine, 0, len(order))
	for _, s := range order {
		name := s.Name()
		if count[name] > 1 {
			name += "/" + s.Runner
			if s.Test != "" {
				name += "/" + s.Test
			}
		}
		res := append([]*protocol.Result(nil), g[s]...)
		sort.SliceStable(res, func(i, j int) bool { return gate.ResultBefore(res[i], res[j]) })
		lines = append(lines, TrendLine{Series: s, Name: name, Results: res})
	}
	return lines
}
