package storage

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

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

func TestExportBenchmarkJSONL(t *testing.T) {
	t.Parallel()
	failed := exportResult()
	failed.Job, failed.Status, failed.Measurements = "jfailed", protocol.StatusFailed, protocol.Measurements{}
	failed.PCC = protocol.PCC{Value: 0.5, Min: 0.99}
	failed.Error = &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "PCC 0.5 below 0.99"}
	failed.Source = protocol.Source{Project: "tt-forge/tt-forge-onnx"}

	var buf bytes.Buffer
	if err := WriteBenchmarkJSONL(&buf, []*protocol.Result{exportResult(), failed}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	// Field names and order match the pydantic models exactly.
	var raw struct {
		Measurements []json.RawMessage `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &raw); err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, []byte(lines[0])); !slices.Equal(got, completeBenchmarkRunFields) {
		t.Fatalf("run fields\n got  %v\n want %v", got, completeBenchmarkRunFields)
	}
	if got := jsonKeys(t, raw.Measurements[0]); !slices.Equal(got, benchmarkMeasurementFields) {
		t.Fatalf("measurement fields\n got  %v\n want %v", got, benchmarkMeasurementFields)
	}

	var run map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &run); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"run_start_ts": "2026-11-03T09:30:00.123456789Z", "run_end_ts": "2026-11-03T09:31:30.123456789Z",
		"run_type": "benchfleet_forge_n150", "git_repo_name": "tenstorrent/tt-forge-onnx",
		"git_commit_hash": "0123456789abcdef0123456789abcdef01234567", "git_commit_ts": "2026-11-02T19:00:00Z",
		"git_branch_name": "main", "device_hostname": "tt-lab-07.farm", "ml_model_name": "resnet50",
		"ml_model_type": "Vision", "num_layers": 50.0, "batch_size": 8.0, "precision": "bfloat16",
		"dataset_name": "Random Data", "image_dimension": "3x224x224", "training": false, "device_ip": nil,
		"github_job_id": nil,
	}
	for k, v := range want {
		if run[k] != v {
			t.Errorf("%s = %#v, want %#v", k, run[k], v)
		}
	}
	info := run["device_info"].(map[string]any)
	if info["arch"] != "wormhole" || info["device_type"] != "n150" || info["device_count"] != 1.0 {
		t.Errorf("device_info %v", info)
	}
	cfg := run["config_params"].(map[string]any)
	if cfg["loop_count"] != 128.0 || cfg["warmup_iterations"] != 32.0 || cfg["job"] != "j0123456789abcdef" {
		t.Errorf("config_params %v", cfg)
	}

	// Measurements: unique (iteration, step_name, name), the upstream names.
	var full BenchmarkRun
	if err := json.Unmarshal([]byte(lines[0]), &full); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	values := map[string]float64{}
	for _, m := range full.Measurements {
		k := m.StepName + "/" + m.Name
		if seen[k] || m.Iteration != 1 || m.StepName != "resnet50" || *m.StepWarmUpNumIterations != 32 {
			t.Fatalf("measurement %+v: duplicate or wrong step", m)
		}
		seen[k] = true
		values[m.Name] = m.Value
	}
	for name, v := range map[string]float64{"total_samples": 1024, "total_time": 12.8, "samples_per_sec": 80,
		"compile_time": 41.5, "evaluation_score": 0.9971, "iteration_p50_ms": 100} {
		if values[name] != v {
			t.Errorf("measurement %s = %v, want %v", name, values[name], v)
		}
	}

	// A failed result exports its PCC only, and the project as the repo.
	var f BenchmarkRun
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Measurements) != 2 || f.Measurements[1].Name != "evaluation_score" || *f.Measurements[1].Target != 0.99 ||
		*f.GitRepoName != "tt-forge/tt-forge-onnx" || f.GitCommitHash != nil || f.ConfigParams["error_class"] != "benchmark" {
		t.Fatalf("failed result export: %s", lines[1])
	}
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
