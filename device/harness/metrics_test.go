package harness

import (
	"encoding/json"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// An LLM test's report (tt-xla benchmarks/llm_benchmark.py, UPSTREAM.md
// §2b): total_samples is decode tokens per user and total_time the decode
// time, so their ratio is tokens/s per user, not samples/s; ttft is the
// time to first token (ms, lower is better); with --accuracy-testing,
// top1/top5 token accuracy (percent). Its metrics say so, each with its
// unit and direction; the roofline targets stay in the report, ungated.
func TestLLMReportMetrics(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(map[string]any{
		"model": "meta-llama/Llama-3.2-1B", "model_type": "text_generation", "run_type": "perf", "batch_size": 32,
		"measurements": []map[string]any{
			{"iteration": 1, "step_name": "llama", "measurement_name": "total_samples", "value": 127},
			{"iteration": 1, "step_name": "llama", "measurement_name": "total_time", "value": 2.54},
			{"iteration": 1, "step_name": "llama", "measurement_name": "ttft", "value": 92.4},
			{"iteration": 1, "step_name": "llama", "measurement_name": "top1_accuracy", "value": 87.5},
			{"iteration": 1, "step_name": "llama", "measurement_name": "top5_accuracy", "value": 97.25},
			{"iteration": 1, "step_name": "llama", "measurement_name": "target_tokens_per_sec_per_user", "value": 60},
		},
		"device_info": map[string]any{"arch": "wormhole", "device_count": 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReport(raw)
	if err != nil {
		t.Fatal(err)
	}
	out := r.outcome(raw, 0.99, 0)
	m := protocol.MetricsFrom(protocol.MetricSource{Measurements: out.Measurements, Report: out.Report})
	want := protocol.Metrics{
		protocol.MetricTokensPerSecPerUser: {Value: 127 / 2.54, Unit: "tokens/s/user", Better: protocol.HigherIsBetter},
		protocol.MetricTTFTMS:              {Value: 92.4, Unit: "ms", Better: protocol.LowerIsBetter},
		protocol.MetricTop1Accuracy:        {Value: 87.5, Unit: "%", Better: protocol.HigherIsBetter},
		protocol.MetricTop5Accuracy:        {Value: 97.25, Unit: "%", Better: protocol.HigherIsBetter},
	}
	if len(m) != len(want) {
		t.Fatalf("metrics %+v, want %+v (no samples_per_sec: an LLM's total_samples is tokens per user)", m, want)
	}
	for n, w := range want {
		if m[n] != w {
			t.Errorf("%s: %+v, want %+v", n, m[n], w)
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	// A Result carries them as "metrics", and reads back the same.
	res := protocol.Result{Metrics: m, Measurements: out.Measurements}
	b, err := json.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	var back protocol.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Metrics[protocol.MetricTTFTMS] != want[protocol.MetricTTFTMS] {
		t.Fatalf("round trip: %v %+v\n%s", err, back.Metrics, b)
	}
	if s := want[protocol.MetricTTFTMS].String(); s != "92.4 ms (lower is better)" {
		t.Errorf("String: %q", s)
	}
}
