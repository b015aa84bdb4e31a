package protocol

import (
	"fmt"
	"math"
	"regexp"
	"sort"
)

// Metrics. A Result carries its figures as named metrics, each with its
// unit and the direction that is better (Result.Metrics, JSON "metrics":
// {"ttft_ms": {"value": 92.4, "unit": "ms", "better": "lower"}}). The
// registry below is the one place that knows each metric: its unit, its
// direction, whether the gate judges it by default, and how it is read
// from what a runner measured (the timed loop's Measurements, the
// upstream report's measurements). Adding a metric is one line here, plus
// a parse rule where a harness prints it.
//
// measurements.samples_per_sec stays where it is for readers of the older
// schema; a result written before metrics existed reads as having
// samples_per_sec and iteration_ms_p50 only (Result.MetricsOf).

// Better is the direction of a metric that is better.
type Better string

// Directions.
const (
	HigherIsBetter Better = "higher"
	LowerIsBetter  Better = "lower"
)

// Metric is one figure of a result.
type Metric struct {
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Better Better  `json:"better"`
}

// Metrics are a result's figures by metric name.
type Metrics map[string]Metric

// MetricSpec is what the registry knows of a metric.
type MetricSpec struct {
	Name   string
	Unit   string
	Better Better
	// Gated says the regression gate judges the metric by default.
	Gated bool
	// Help says what it is, for docs and --help.
	Help string
	// from reads the metric from what a runner measured; ok false when
	// the run did not measure it.
	from func(MetricSource) (float64, bool)
}

// MetricSource is what a run measured: the timed loop's figures and, for
// an upstream harness, its report.
type MetricSource struct {
	Measurements Measurements
	// Report is the upstream report's facts (nil: none).
	Report *UpstreamReport
}

// LLM says the run is an LLM test's: its report has a time to first
// token (tt-xla's benchmarks/llm_benchmark.py writes "ttft"), and its
// total_samples is decode tokens per user, so total_samples / total_time
// is tokens/s per user, not samples/s (UPSTREAM.md §2b).
func (s MetricSource) LLM() bool {
	_, ok := s.reported("ttft")
	return ok
}

// reported is the report's first measurement called name.
func (s MetricSource) reported(name string) (float64, bool) {
	if s.Report == nil {
		return 0, false
	}
	for _, m := range s.Report.Measurements {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// fromReport reads the report's measurement name.
func fromReport(name string) func(MetricSource) (float64, bool) {
	return func(s MetricSource) (float64, bool) { return s.reported(name) }
}

// The metric names.
const (
	MetricSamplesPerSec               = "samples_per_sec"
	MetricTokensPerSecPerUser         = "tokens_per_sec_per_user"
	MetricTTFTMS                      = "ttft_ms"
	MetricTop1Accuracy                = "top1_accuracy"
	MetricTop5Accuracy                = "top5_accuracy"
	MetricEvaluationScore             = "evaluation_score"
	MetricIterationMSP50              = "iteration_ms_p50"
	maxMetrics                        = 64
	maxMetricUnit                     = 32
	metricNamePattern                 = `^[a-z][a-z0-9_]{0,63}$`
	metricValueLimit          float64 = 1e15
)

// metricSpecs is the registry, one line per metric.
var metricSpecs = []MetricSpec{
	{MetricSamplesPerSec, "samples/s", HigherIsBetter, true, "total_samples / total_time of the timed loop (not of an LLM test: see tokens_per_sec_per_user)",
		func(s MetricSource) (float64, bool) { v := s.Measurements.SamplesPerSec; return v, v > 0 && !s.LLM() }},
	{MetricTokensPerSecPerUser, "tokens/s/user", HigherIsBetter, true, "an LLM test's decode tokens per user / decode time (its report's total_samples / total_time)",
		func(s MetricSource) (float64, bool) { v := s.Measurements.SamplesPerSec; return v, v > 0 && s.LLM() }},
	{MetricTTFTMS, "ms", LowerIsBetter, true, "an LLM test's time to first token (the prefill), its report's ttft", fromReport("ttft")},
	{MetricTop1Accuracy, "%", HigherIsBetter, true, "an LLM test's top-1 token accuracy with --accuracy-testing", fromReport("top1_accuracy")},
	{MetricTop5Accuracy, "%", HigherIsBetter, true, "an LLM test's top-5 token accuracy with --accuracy-testing", fromReport("top5_accuracy")},
	{MetricEvaluationScore, "score", HigherIsBetter, false, "the report's evaluation_score (what it scores is the test's); its 0.0 is upstream's placeholder for nothing evaluated",
		func(s MetricSource) (float64, bool) { v, ok := s.reported("evaluation_score"); return v, ok && v > 0 }},
	{MetricIterationMSP50, "ms", LowerIsBetter, false, "the median timed iteration",
		func(s MetricSource) (float64, bool) { v := s.Measurements.IterationMS.P50; return v, v > 0 && !s.LLM() }},
}

// MetricSpecOf is the registry's spec of name.
func MetricSpecOf(name string) (MetricSpec, bool) {
	for _, s := range metricSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return MetricSpec{}, false
}

// MetricsFrom reads every registered metric src measured: a loop figure
// above 0 (0 is "not measured"), a report's measurement whatever it is (a
// top-1 accuracy of 0% is a measurement); negative, infinite or huge
// values, which no run measures, are left out.
func MetricsFrom(src MetricSource) Metrics {
	out := Metrics{}
	for _, s := range metricSpecs {
		v, ok := s.from(src)
		if ok && v >= 0 && v < metricValueLimit {
			out[s.Name] = Metric{Value: v, Unit: s.Unit, Better: s.Better}
		}
	}
	return out
}

// MetricsOf is r's metrics: its own, else (a result written before
// metrics) samples_per_sec and iteration_ms_p50 from its measurements.
func (r *Result) MetricsOf() Metrics {
	if len(r.Metrics) > 0 {
		return r.Metrics
	}
	return MetricsFrom(MetricSource{Measurements: r.Measurements})
}

// Names is the metrics' names, sorted.
func (m Metrics) Names() []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var metricName = regexp.MustCompile(metricNamePattern)

// Check validates metrics a result carries: at most 64, each named like
// a registry name, a finite value, a short unit, a direction; a metric
// the registry knows has the registry's unit and direction.
func (m Metrics) Check() error {
	if len(m) > maxMetrics {
		return fieldErr("metrics", "must have at most %d entries (got %d)", maxMetrics, len(m))
	}
	for _, n := range m.Names() {
		v := m[n]
		field := "metrics." + n
		switch {
		case !metricName.MatchString(n):
			return fieldErr("metrics", "name %q must match %s", truncate(n, 40), metricNamePattern)
		case math.IsNaN(v.Value) || math.IsInf(v.Value, 0) || math.Abs(v.Value) >= metricValueLimit:
			return fieldErr(field, "value must be a finite number below %g", metricValueLimit)
		case len(v.Unit) > maxMetricUnit:
			return fieldErr(field, "unit must be at most %d bytes", maxMetricUnit)
		case v.Better != HigherIsBetter && v.Better != LowerIsBetter:
			return fieldErr(field, "better must be %q or %q (got %q)", HigherIsBetter, LowerIsBetter, truncate(string(v.Better), 20))
		}
		if s, ok := MetricSpecOf(n); ok && (s.Unit != v.Unit || s.Better != v.Better) {
			return fieldErr(field, "unit %q, better %q: the registry's are %q, %q", v.Unit, v.Better, s.Unit, s.Better)
		}
	}
	return nil
}

// String is the metric as people read it, e.g. "92.4 ms (lower is better)".
func (v Metric) String() string {
	return fmt.Sprintf("%s %s (%s is better)", formatMetricValue(v.Value), v.Unit, v.Better)
}

func formatMetricValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}
