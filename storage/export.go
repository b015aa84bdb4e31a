package storage

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// BenchmarkRun is one result in the shape of Tenstorrent's
// CompleteBenchmarkRun record (the pydantic model their CI loads into its
// benchmark database), so benchfleet results can flow into their
// dashboards. Optional fields of the model are pointers and written as null
// when unknown, as pydantic writes them.
type BenchmarkRun struct {
	RunStartTS           time.Time              `json:"run_start_ts"`
	RunEndTS             time.Time              `json:"run_end_ts"`
	RunType              string                 `json:"run_type"`
	GitRepoName          *string                `json:"git_repo_name"`
	GitCommitHash        *string                `json:"git_commit_hash"`
	GitCommitTS          *time.Time             `json:"git_commit_ts"`
	GitBranchName        *string                `json:"git_branch_name"`
	GithubPipelineID     *int64                 `json:"github_pipeline_id"`
	GithubPipelineLink   *string                `json:"github_pipeline_link"`
	GithubJobID          *int64                 `json:"github_job_id"`
	UserName             *string                `json:"user_name"`
	DockerImage          *string                `json:"docker_image"`
	DeviceHostname       string                 `json:"device_hostname"`
	DeviceIP             *string                `json:"device_ip"`
	DeviceInfo           map[string]any         `json:"device_info"`
	MLModelName          string                 `json:"ml_model_name"`
	MLModelType          *string                `json:"ml_model_type"`
	NumLayers            *int                   `json:"num_layers"`
	BatchSize            *int                   `json:"batch_size"`
	ConfigParams         map[string]any         `json:"config_params"`
	Precision            *string                `json:"precision"`
	DatasetName          *string                `json:"dataset_name"`
	ProfilerName         *string                `json:"profiler_name"`
	InputSequenceLength  *int                   `json:"input_sequence_length"`
	OutputSequenceLength *int                   `json:"output_sequence_length"`
	ImageDimension       *string                `json:"image_dimension"`
	PerfAnalysis         *bool                  `json:"perf_analysis"`
	Training             *bool                  `json:"training"`
	Measurements         []BenchmarkMeasurement `json:"measurements"`
}

// BenchmarkMeasurement is one measurement of a BenchmarkRun (their
// BenchmarkMeasurement model). The triple (iteration, step_name, name) is
// unique within a run.
type BenchmarkMeasurement struct {
	StepStartTS             time.Time `json:"step_start_ts"`
	StepEndTS               time.Time `json:"step_end_ts"`
	Iteration               int       `json:"iteration"`
	StepName                string    `json:"step_name"`
	StepWarmUpNumIterations *int      `json:"step_warm_up_num_iterations"`
	Name                    string    `json:"name"`
	Value                   float64   `json:"value"`
	Target                  *float64  `json:"target"`
	DevicePower             *float64  `json:"device_power"`
	DeviceTemperature       *float64  `json:"device_temperature"`
}

// Labels a job can carry to fill export fields benchfleet does not know.
const (
	LabelRunType     = "run_type"      // run_type; default "benchfleet_<runner>_<pool>"
	LabelModelType   = "model_type"    // ml_model_type; default from the model
	LabelGitCommitTS = "git_commit_ts" // git_commit_ts, RFC 3339
	LabelUser        = "user"          // user_name
	LabelDockerImage = "docker_image"  // docker_image
)

// ToBenchmarkRun maps a result to a CompleteBenchmarkRun record:
//
//	run_start_ts/run_end_ts   started_at/finished_at of the result
//	git_*                      source repo (or project), commit, branch
//	device_hostname            the worker's host; device_info the device
//	ml_model_name, batch_size  the benchmark; precision = data_format
//	config_params              loop/warmup counts, runner, pool, run, job,
//	                           attempt, status, pcc_min, phases, labels
//	measurements               iteration 1, step_name = the model, as the
//	                           upstream harness writes them: total_samples,
//	                           total_time, samples_per_sec, compile_time,
//	                           iteration latencies (ms), evaluation_score
//	                           (the PCC, with the required PCC as target)
func ToBenchmarkRun(r *protocol.Result) BenchmarkRun {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	num := func(n int) *int {
		if n <= 0 {
			return nil
		}
		return &n
	}
	run := BenchmarkRun{
		RunStartTS: r.StartedAt.UTC(), RunEndTS: r.FinishedAt.UTC(),
		RunType:       r.Labels[LabelRunType],
		GitRepoName:   str(r.Source.Repo),
		GitCommitHash: str(r.Source.Commit), GitBranchName: str(r.Source.Branch),
		UserName: str(r.Labels[LabelUser]), DockerImage: str(r.Labels[LabelDockerImage]),
		DeviceHostname: r.Worker.Host,
		MLModelName:    r.Benchmark.Model, MLModelType: str(r.Labels[LabelModelType]),
		NumLayers: num(modelLayers(r.Benchmark.Model)), BatchSize: num(r.Benchmark.BatchSize),
		Precision: str(r.Benchmark.DataFormat), DatasetName: str("Random Data"), ProfilerName: str(r.Runner),
		ImageDimension: str(imageDimension(r.Benchmark)), Training: &r.Benchmark.Training,
		PerfAnalysis: new(false),
	}
	if run.RunType == "" {
		run.RunType = "benchfleet_" + r.Runner + "_" + r.Pool
	}
	if run.GitRepoName == nil {
		run.GitRepoName = str(r.Source.Project)
	}
	if run.DeviceHostname == "" {
		run.DeviceHostname = r.Worker.ID
	}
	if t, err := time.Parse(time.RFC3339, r.Labels[LabelGitCommitTS]); err == nil {
		t = t.UTC()
		run.GitCommitTS = &t
	}
	if run.MLModelType == nil && isVision(r.Benchmark.Model) {
		run.MLModelType = str("Vision")
	}
	run.DeviceInfo = map[string]any{
		"device_name": r.Device.ID, "device_type": r.Device.Pool, "arch": r.Device.Arch,
		"device_count": r.Device.Chips, "firmware": r.Device.Firmware, "galaxy": r.Device.Pool == "galaxy",
	}
	cfg := map[string]any{
		"loop_count": r.Benchmark.LoopCount, "warmup_iterations": r.Benchmark.WarmupCount,
		"data_format": r.Benchmark.DataFormat, "runner": r.Runner, "pool": r.Pool, "run": r.Run, "job": r.Job,
		"run_created_at": r.RunCreatedAt.UTC(), "attempt": r.Attempt, "status": r.Status, "pcc_min": r.PCC.Min,
		"worker_id": r.Worker.ID, "worker_version": r.Worker.Version,
		"phases": map[string]float64{"compile_s": r.Phases.CompileS, "warmup_s": r.Phases.WarmupS,
			"timing_s": r.Phases.TimingS, "pcc_s": r.Phases.PCCS, "upload_s": r.Phases.UploadS},
	}
	if r.Benchmark.Test != "" {
		cfg["test"] = r.Benchmark.Test
	}
	if r.Error != nil {
		cfg["error_class"], cfg["error_message"] = r.Error.Class, r.Error.Message
	}
	if len(r.Labels) > 0 {
		cfg["labels"] = r.Labels
	}
	run.ConfigParams = cfg

	warm := num(r.Benchmark.WarmupCount)
	m := func(name string, v float64, target *float64) BenchmarkMeasurement {
		return BenchmarkMeasurement{StepStartTS: run.RunStartTS, StepEndTS: run.RunEndTS, Iteration: 1,
			StepName: r.Benchmark.Model, StepWarmUpNumIterations: warm, Name: name, Value: v, Target: target}
	}
	ms := r.Measurements
	if ms.TotalTimeS > 0 {
		run.Measurements = append(run.Measurements,
			m("total_samples", float64(ms.TotalSamples), nil),
			m("total_time", ms.TotalTimeS, nil),
			m("samples_per_sec", ms.SamplesPerSec, nil),
			m("iteration_min_ms", ms.IterationMS.Min, nil),
			m("iteration_p50_ms", ms.IterationMS.P50, nil),
			m("iteration_p90_ms", ms.IterationMS.P90, nil),
			m("iteration_p99_ms", ms.IterationMS.P99, nil),
			m("iteration_max_ms", ms.IterationMS.Max, nil),
			m("iteration_mean_ms", ms.IterationMS.Mean, nil),
			m("iteration_stddev_ms", ms.IterationMS.Stddev, nil),
		)
	}
	if r.Phases.CompileS > 0 {
		run.Measurements = append(run.Measurements, m("compile_time", r.Phases.CompileS, nil))
	}
	if r.PCC.Value != 0 || r.PCC.Passed {
		var target *float64
		if r.PCC.Min > 0 {
			target = new(r.PCC.Min)
		}
		run.Measurements = append(run.Measurements, m("evaluation_score", r.PCC.Value, target))
	}
	if run.Measurements == nil {
		run.Measurements = []BenchmarkMeasurement{}
	}
	return run
}

// modelLayers is the depth of the models whose name says it (resnet50 → 50).
func modelLayers(model string) int {
	for _, p := range []string{"resnet", "vgg", "densenet"} {
		if rest, ok := strings.CutPrefix(model, p); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				return n
			}
		}
	}
	return 0
}

func isVision(model string) bool {
	for _, p := range []string{"resnet", "vgg", "vit", "mobilenet", "efficientnet", "yolo", "unet", "densenet"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// imageDimension is "3xHxW" for vision models (224 unless the job says).
func imageDimension(b protocol.Benchmark) string {
	if !isVision(b.Model) {
		return ""
	}
	size := b.InputSize
	if size <= 0 {
		size = 224
	}
	return fmt.Sprintf("3x%dx%d", size, size)
}

// WriteBenchmarkJSONL writes one CompleteBenchmarkRun JSON object per line.
func WriteBenchmarkJSONL(w io.Writer, rs []*protocol.Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		if err := enc.Encode(ToBenchmarkRun(r)); err != nil {
			return fmt.Errorf("storage: export %s: %w", r.Job, err)
		}
	}
	return nil
}
