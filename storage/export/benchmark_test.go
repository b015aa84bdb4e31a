package export

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/internal/recordtest"
	"github.com/benchfleet/benchfleet/protocol"
)

// The fields of Tenstorrent's CompleteBenchmarkRun and BenchmarkMeasurement
// pydantic models, in their order.
var (
	completeBenchmarkRunFields = []string{"run_start_ts", "run_end_ts", "run_type", "git_repo_name", "git_commit_hash",
		"git_commit_ts", "git_branch_name", "github_pipeline_id", "github_pipeline_link", "github_job_id", "user_name",
		"docker_image", "device_hostname", "device_ip", "device_info", "ml_model_name", "ml_model_type", "num_layers",
		"batch_size", "config_params", "precision", "dataset_name", "profiler_name", "input_sequence_length",
		"output_sequence_length", "image_dimension", "perf_analysis", "training", "measurements"}
	benchmarkMeasurementFields = []string{"step_start_ts", "step_end_ts", "iteration", "step_name",
		"step_warm_up_num_iterations", "name", "value", "target", "device_power", "device_temperature"}
)

func exportResult() *protocol.Result {
	t0 := time.Date(2026, 11, 3, 9, 30, 0, 123456789, time.UTC)
	return &protocol.Result{
		Schema: protocol.SchemaResult, Job: "j0123456789abcdef", Run: "nightly-1103", RunCreatedAt: t0.Add(-time.Minute),
		Pool: "n150", Runner: "forge", Status: protocol.StatusPassed, Attempt: 1,
		StartedAt: t0, FinishedAt: t0.Add(90 * time.Second),
		Worker: protocol.WorkerRef{ID: "tt-lab-07", Host: "tt-lab-07.farm", Version: "v1.0.0"},
		Device: protocol.DeviceRef{ID: "0", Pool: "n150", Arch: "wormhole", Chips: 1, Firmware: "80.17.0"},
		Benchmark: protocol.Benchmark{Test: "forge/test/benchmark/test_vision.py::test_resnet50", Model: "resnet50",
			BatchSize: 8, LoopCount: 128, WarmupCount: 32, DataFormat: "bfloat16"},
		Source: protocol.Source{Project: "tt-forge/tt-forge-onnx", Repo: "tenstorrent/tt-forge-onnx",
			Commit: "0123456789abcdef0123456789abcdef01234567", Branch: "main"},
		Phases: protocol.Phases{CompileS: 41.5, WarmupS: 3, TimingS: 12.8, PCCS: 0.4},
		Measurements: protocol.Measurements{TotalSamples: 1024, TotalTimeS: 12.8, SamplesPerSec: 80,
			IterationMS: protocol.IterationMS{Min: 90, P50: 100, P90: 105, P99: 110, Max: 120, Mean: 100, Stddev: 3}},
		PCC:    protocol.PCC{Value: 0.9971, Min: 0.99, Passed: true},
		Labels: map[string]string{"trigger": "nightly", "git_commit_ts": "2026-11-02T20:00:00+01:00"},
	}
}

// reportResult is exportResult after a forge harness run: the report
// (the harness fixture, as the Result keeps it), telemetry of the timed
// loop, and the CI run that submitted it.
func reportResult(t *testing.T) *protocol.Result {
	t.Helper()
	r := exportResult()
	data, err := os.ReadFile("../../device/harness/testdata/resnet50_report.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Report = harness.Upstream(data)
	r.Telemetry = &protocol.Telemetry{Samples: 12, Source: "hwmon",
		PowerW: &protocol.Stat{Min: 80, Mean: 92.5, Max: 101}, TemperatureC: &protocol.Stat{Min: 55, Mean: 58.25, Max: 61}}
	r.Source.CIRunID = 12345678901
	r.Source.CIRunURL = "https://github.com/tenstorrent/tt-forge-onnx/actions/runs/12345678901"
	return r
}

// The export is built as Tenstorrent's loader builds the record from a
// harness report: the report's model, device_info and config as they are,
// its measurements with step_warm_up_num_iterations 0, ours beside them,
// device_power from telemetry, timestamps with at most 6 fractional
// digits, the GitHub run id and link; it validates as CompleteBenchmarkRun.
func TestExportFromUpstreamReport(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, []*protocol.Result{reportResult(t)}); err != nil {
		t.Fatal(err)
	}
	line := bytes.TrimSpace(buf.Bytes())
	if got := jsonKeys(t, line); !slices.Equal(got, completeBenchmarkRunFields) {
		t.Fatalf("run fields\n got  %v\n want %v", got, completeBenchmarkRunFields)
	}
	var raw struct {
		Measurements []json.RawMessage `json:"measurements"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, raw.Measurements[0]); !slices.Equal(got, benchmarkMeasurementFields) {
		t.Fatalf("measurement fields\n got  %v\n want %v", got, benchmarkMeasurementFields)
	}
	var run map[string]any
	if err := json.Unmarshal(line, &run); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"run_start_ts": "2026-11-03T09:30:00.123456Z", "run_end_ts": "2026-11-03T09:31:30.123456Z",
		"run_type": "onnx_resnet_resnet_50_hf_cv_image_cls_hf_8_3_224_224_-1_128", "git_repo_name": "tt-forge/tt-forge-onnx",
		"git_commit_hash": "0123456789abcdef0123456789abcdef01234567", "git_commit_ts": "2026-11-02T19:00:00Z",
		"git_branch_name": "main", "device_hostname": "tt-lab-07.farm", "ml_model_name": "onnx_resnet_resnet_50_hf_cv_image_cls_hf",
		"ml_model_type": "Vision", "num_layers": -1.0, "batch_size": 8.0, "precision": "bfloat16",
		"dataset_name": "Random Data", "image_dimension": "3x224x224", "training": false, "device_ip": nil,
		"github_job_id": nil, "github_pipeline_id": 12345678901.0, "profiler_name": "", "perf_analysis": false,
		"github_pipeline_link":  "https://github.com/tenstorrent/tt-forge-onnx/actions/runs/12345678901",
		"input_sequence_length": -1.0, "output_sequence_length": -1.0,
	}
	for k, v := range want {
		if run[k] != v {
			t.Errorf("%s = %#v, want %#v", k, run[k], v)
		}
	}
	info := run["device_info"].(map[string]any)
	if got := sortedMapKeys(info); !slices.Equal(got, []string{"arch", "device_count", "device_name", "device_type"}) {
		t.Errorf("device_info keys %v, want the report's", got)
	}
	cfg := run["config_params"].(map[string]any)
	wantCfg := []string{"backend", "display_name", "model_info", "model_size", "optimization_level", "program_cache_enabled",
		"trace_enabled", "training", "warmup_iterations"}
	if got := sortedMapKeys(cfg); !slices.Equal(got, wantCfg) {
		t.Errorf("config_params keys %v, want the report's config %v", got, wantCfg)
	}
	var full BenchmarkRun
	if err := json.Unmarshal(line, &full); err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, m := range full.Measurements {
		if m.Iteration != 1 || m.StepName != "onnx_resnet_resnet_50_hf_cv_image_cls_hf" || *m.StepWarmUpNumIterations != 0 ||
			*m.DevicePower != 92.5 || *m.DeviceTemperature != 58.25 {
			t.Fatalf("measurement %+v", m)
		}
		values[m.Name] = m.Value
	}
	for name, v := range map[string]float64{"total_samples": 1024, "total_time": 2.0483, "samples_per_sec": 80,
		"compile_time": 41.5, "pcc": 0.9971, "iteration_p50_ms": 100} {
		if values[name] != v {
			t.Errorf("measurement %s = %v, want %v", name, values[name], v)
		}
	}
	recordtest.Validate(t, buf.Bytes())
}

// Without a report (a failed run, a built-in runner) the record is built
// from the job's own facts; it validates too.
func TestExportWithoutReport(t *testing.T) {
	t.Parallel()
	failed := exportResult()
	failed.Job, failed.Status, failed.Measurements = "jfailed", protocol.StatusFailed, protocol.Measurements{}
	failed.PCC = protocol.PCC{Value: 0.5, Min: 0.99}
	failed.Error = &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "PCC 0.5 below 0.99"}
	failed.Source = protocol.Source{Project: "tt-forge/tt-forge-onnx"}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, []*protocol.Result{exportResult(), failed}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	var p BenchmarkRun
	if err := json.Unmarshal([]byte(lines[0]), &p); err != nil {
		t.Fatal(err)
	}
	if p.MLModelName != "resnet50" || p.NumLayers != nil || p.RunType != "benchfleet_forge_n150" || *p.GitRepoName != "tenstorrent/tt-forge-onnx" {
		t.Fatalf("record %s", lines[0])
	}
	var f BenchmarkRun
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Measurements) != 2 || f.Measurements[1].Name != "pcc" || *f.Measurements[1].Target != 0.99 ||
		*f.GitRepoName != "tt-forge/tt-forge-onnx" || f.GitCommitHash != nil {
		t.Fatalf("failed result export: %s", lines[1])
	}
	recordtest.Validate(t, buf.Bytes())
}

func TestFileName(t *testing.T) {
	t.Parallel()
	r := reportResult(t)
	if got, want := FileName(r), "benchmark_12345678901_2026-11-03T09:30:00+0000.jsonl"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	r.Source.CIRunID = 0
	if got := FileName(r); got != "benchmark_nightly-1103_2026-11-03T09:30:00+0000.jsonl" {
		t.Fatalf("without a CI run: %s", got)
	}
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jsonKeys lists the keys of a JSON object in document order.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
