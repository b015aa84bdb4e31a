package protocol

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// A result written before metrics reads as having samples_per_sec and
// iteration_ms_p50 from its measurements; metrics that break the
// registry's unit or direction, or that no run measures, do not check.
func TestMetricsOfOldResultsAndCheck(t *testing.T) {
	t.Parallel()
	old := &Result{Measurements: Measurements{SamplesPerSec: 812.5, IterationMS: IterationMS{P50: 9.8}}}
	m := old.MetricsOf()
	if len(m) != 2 || m[MetricSamplesPerSec] != (Metric{812.5, "samples/s", HigherIsBetter}) || m[MetricIterationMSP50] != (Metric{9.8, "ms", LowerIsBetter}) {
		t.Fatalf("an old result's metrics: %+v", m)
	}
	if m := (&Result{}).MetricsOf(); len(m) != 0 {
		t.Errorf("a result that measured nothing has metrics %+v", m)
	}
	for name, bad := range map[string]Metrics{
		"ttft_ms":    {MetricTTFTMS: {92, "ms", HigherIsBetter}},
		"unit":       {MetricSamplesPerSec: {1, "it/s", HigherIsBetter}},
		"better":     {"e2e_latency": {1, "ms", "sideways"}},
		"finite":     {"e2e_latency": {math.Inf(1), "ms", LowerIsBetter}},
		"must match": {"E2E Latency": {1, "ms", LowerIsBetter}},
	} {
		err := bad.Check()
		var fe *FieldError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v, want an error naming %s", bad, err, name)
		}
	}
	if err := (Metrics{"e2e_latency": {12.5, "ms", LowerIsBetter}}).Check(); err != nil {
		t.Errorf("an unregistered metric with a unit and direction: %v", err)
	}
	names := map[string]bool{}
	for _, s := range metricSpecs {
		if names[s.Name] || !metricName.MatchString(s.Name) || s.Unit == "" || (s.Better != HigherIsBetter && s.Better != LowerIsBetter) {
			t.Errorf("registry entry %+v", s)
		}
		names[s.Name] = true
	}
}
