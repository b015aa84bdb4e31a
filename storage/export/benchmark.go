// Package export writes benchfleet results in other systems' shapes: today
// Tenstorrent's CompleteBenchmarkRun record, as their CI database loader
// builds it (`benchfleet results export --format benchmark-jsonl`).
package export

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
// CompleteBenchmarkRun record (tenstorrent/tt-metal
// infra/data_collection/pydantic_models.py, the pydantic v2 model their CI
// loads into its benchmark database), built as their loader
// (tenstorrent/tt-github-actions collect_data, ForgeBenchmarkDataMapper)
// builds it from a harness report, so benchfleet results flow into their
// dashboards. Optional fields are pointers and written as null when
// unknown, as pydantic writes them.
type BenchmarkRun struct {
	RunStartTS           Timestamp              `json:"run_start_ts"`
	RunEndTS             Timestamp              `json:"run_end_ts"`
	RunType              string                 `json:"run_type"`
	GitRepoName          *string                `json:"git_repo_name"`
	GitCommitHash        *string                `json:"git_commit_hash"`
	GitCommitTS          *Timestamp             `json:"git_commit_ts"`
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
	StepStartTS             Timestamp `json:"step_start_ts"`
	StepEndTS               Timestamp `json:"step_end_ts"`
	Iteration               int       `json:"iteration"`
	StepName                string    `json:"step_name"`
	StepWarmUpNumIterations *int      `json:"step_warm_up_num_iterations"`
	Name                    string    `json:"name"`
	Value                   float64   `json:"value"`
	Target                  *float64  `json:"target"`
	DevicePower             *float64  `json:"device_power"`
	DeviceTemperature       *float64  `json:"device_temperature"`
}

// Timestamp is a time written as ISO 8601 in UTC with at most 6 fractional
// digits (the record's parser takes no more).
type Timestamp time.Time

// MarshalJSON implements json.Marshaler.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Time(t).UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.999999Z07:00"))
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var v time.Time
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Timestamp(v)
	return nil
}

// Labels a job can carry to fill export fields benchfleet does not know.
const (
	LabelRunType     = "run_type"      // run_type when there is no report; default "benchfleet_<runner>_<pool>"
	LabelModelType   = "model_type"    // ml_model_type when there is no report
	LabelGitCommitTS = "git_commit_ts" // git_commit_ts, RFC 3339 (default: the run's creation)
	LabelUser        = "user"          // user_name
	LabelDockerImage = "docker_image"  // docker_image
)

// ConfigTrust is the config_params key that marks the record of a result
// of the untrusted producer ("untrusted"; absent for trusted results).
const ConfigTrust = "benchfleet_trust"

// ToBenchmarkRun maps a result to a CompleteBenchmarkRun record. With an
// upstream report (a passed harness run) it maps as the loader does:
//
//	ml_model_name, ml_model_type, run_type   the report's model, model_type, run_type
//	device_info, config_params               the report's device_info and config, as they are
//	                                         (config_params gains benchfleet_trust: "untrusted"
//	                                         for a result of the untrusted producer)
//	num_layers, batch_size, precision, ...   the report's
//	git_repo_name                            the report's project
//	measurements                             the report's (total_samples, total_time, ...)
//	                                         with name = measurement_name
//
// and from benchfleet: run_start_ts/run_end_ts and each step's times (the
// attempt's start and end), git commit and branch, github_pipeline_id and
// _link (the CI run that submitted the job), device_hostname (the worker's
// host), and extra measurements of the same step: samples_per_sec, the
// timed loop's iteration latencies (iteration_*_ms), pcc (target: the
// required PCC) and compile_time. device_power and device_temperature of
// every measurement are the board's mean over the timed loop (telemetry),
// or the report's (-1) without it. Without a report (built-in runners,
// failed runs) the same record is built from the job's own facts.
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
	start, end := Timestamp(r.StartedAt), Timestamp(r.FinishedAt)
	run := BenchmarkRun{
		RunStartTS: start, RunEndTS: end,
		GitCommitHash: str(r.Source.Commit), GitBranchName: str(r.Source.Branch),
		UserName: str(r.Labels[LabelUser]), DockerImage: str(r.Labels[LabelDockerImage]),
		DeviceHostname: r.Worker.Host, GithubPipelineLink: str(r.Source.CIRunURL),
		Training: &r.Benchmark.Training,
	}
	if r.Source.CIRunID > 0 {
		run.GithubPipelineID = &r.Source.CIRunID
	}
	if run.DeviceHostname == "" {
		run.DeviceHostname = r.Worker.ID
	}
	commitTS := Timestamp(r.RunCreatedAt)
	if t, err := time.Parse(time.RFC3339, r.Labels[LabelGitCommitTS]); err == nil {
		commitTS = Timestamp(t)
	}
	// A commit's time only with a commit (the loader takes the pipeline's
	// submission time; the run's creation stands in for it).
	if (r.Source.Commit != "" && !r.RunCreatedAt.IsZero()) || r.Labels[LabelGitCommitTS] != "" {
		run.GitCommitTS = &commitTS
	}
	var power, temp *float64
	if tm := r.Telemetry; tm != nil {
		if tm.PowerW != nil {
			power = &tm.PowerW.Mean
		}
		if tm.TemperatureC != nil {
			temp = &tm.TemperatureC.Mean
		}
	}
	warm := 0 // upstream writes 0
	m := func(step, name string, v float64, target, p, t *float64) BenchmarkMeasurement {
		if power != nil {
			p = power
		}
		if temp != nil {
			t = temp
		}
		return BenchmarkMeasurement{StepStartTS: start, StepEndTS: end, Iteration: 1, StepName: step,
			StepWarmUpNumIterations: &warm, Name: name, Value: v, Target: target, DevicePower: p, DeviceTemperature: t}
	}
	step := r.Benchmark.Model
	if rep := r.Report; rep != nil {
		step = rep.Model
		run.RunType, run.MLModelName, run.MLModelType = rep.RunType, rep.Model, str(rep.ModelType)
		run.GitRepoName = str(rep.Project)
		run.DeviceInfo, run.ConfigParams = rep.DeviceInfo, rep.Config
		run.NumLayers, run.BatchSize = rep.NumLayers, rep.BatchSize
		run.Precision, run.DatasetName, run.ProfilerName = str(rep.Precision), str(rep.DatasetName), &rep.ProfileName
		run.InputSequenceLength, run.OutputSequenceLength = rep.InputSequenceLength, rep.OutputSequenceLength
		run.ImageDimension, run.PerfAnalysis = str(rep.ImageDimension), rep.PerfAnalysis
		for _, um := range rep.Measurements {
			target, p, t := um.Target, -1.0, -1.0
			bm := m(um.StepName, um.Name, um.Value, &target, &p, &t)
			bm.Iteration = um.Iteration
			run.Measurements = append(run.Measurements, bm)
		}
	} else {
		run.RunType = r.Labels[LabelRunType]
		run.MLModelName, run.MLModelType = r.Benchmark.Model, str(r.Labels[LabelModelType])
		run.BatchSize, run.Precision = num(r.Benchmark.BatchSize), str(r.Benchmark.DataFormat)
		run.DatasetName, run.ProfilerName = str("Random Data"), str(r.Runner)
		run.ImageDimension, run.PerfAnalysis = str(imageDimension(r.Benchmark)), new(false)
		run.DeviceInfo = map[string]any{"device_name": r.Worker.Host, "arch": r.Device.Arch,
			"device_count": r.Device.Chips, "device_type": r.Device.Pool}
		run.ConfigParams = map[string]any{"warmup_iterations": r.Benchmark.WarmupCount, "training": r.Benchmark.Training}
		if ms := r.Measurements; ms.TotalTimeS > 0 {
			run.Measurements = append(run.Measurements,
				m(step, "total_samples", float64(ms.TotalSamples), nil, nil, nil),
				m(step, "total_time", ms.TotalTimeS, nil, nil, nil))
		}
	}
	if run.RunType == "" {
		run.RunType = "benchfleet_" + r.Runner + "_" + r.Pool
	}
	if r.Untrusted() {
		// The record has no field for it: config_params says it, so a
		// dashboard fed by the export can leave it out of its baselines.
		params := make(map[string]any, len(run.ConfigParams)+1)
		for k, v := range run.ConfigParams {
			params[k] = v
		}
		params[ConfigTrust] = string(protocol.TrustUntrusted)
		run.ConfigParams = params
	}
	if run.GitRepoName == nil {
		run.GitRepoName = str(r.Source.Repo)
	}
	if run.GitRepoName == nil {
		run.GitRepoName = str(r.Source.Project)
	}
	if run.MLModelName == "" {
		run.MLModelName = r.Benchmark.Model
	}
	// benchfleet's own figures, as further measurements of the same step.
	ms := r.Measurements
	if ms.TotalTimeS > 0 {
		run.Measurements = append(run.Measurements, m(step, "samples_per_sec", ms.SamplesPerSec, nil, nil, nil))
		if it := ms.IterationMS; it.Max > 0 {
			for _, v := range []struct {
				name string
				v    float64
			}{{"min", it.Min}, {"p50", it.P50}, {"p90", it.P90}, {"p99", it.P99}, {"max", it.Max}, {"mean", it.Mean}, {"stddev", it.Stddev}} {
				run.Measurements = append(run.Measurements, m(step, "iteration_"+v.name+"_ms", v.v, nil, nil, nil))
			}
		}
	}
	if r.Phases.CompileS > 0 {
		run.Measurements = append(run.Measurements, m(step, "compile_time", r.Phases.CompileS, nil, nil, nil))
	}
	if r.PCC.Value != 0 || r.PCC.Passed {
		var target *float64
		if r.PCC.Min > 0 {
			target = new(r.PCC.Min)
		}
		run.Measurements = append(run.Measurements, m(step, "pcc", r.PCC.Value, target, nil, nil))
	}
	if run.Measurements == nil {
		run.Measurements = []BenchmarkMeasurement{}
	}
	return run
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

// WriteJSONL writes one CompleteBenchmarkRun JSON object per line.
func WriteJSONL(w io.Writer, rs []*protocol.Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		if err := enc.Encode(ToBenchmarkRun(r)); err != nil {
			return fmt.Errorf("export %s: %w", r.Job, err)
		}
	}
	return nil
}

// FileName is the loader's name for the records of one pipeline:
// benchmark_<github_pipeline_id>_<run_start_ts as %Y-%m-%dT%H:%M:%S%z>.jsonl
// (tt-github-actions get_benchmark_filename). Results submitted outside CI
// use their run id in place of the pipeline id.
func FileName(r *protocol.Result) string {
	id := r.Run
	if r.Source.CIRunID > 0 {
		id = strconv.FormatInt(r.Source.CIRunID, 10)
	}
	return fmt.Sprintf("benchmark_%s_%s.jsonl", id, r.StartedAt.UTC().Format("2006-01-02T15:04:05-0700"))
}

// GroupFiles groups rs by FileName of each group's first
// result (results of one pipeline share a file), in first-seen order.
func GroupFiles(rs []*protocol.Result) (names []string, groups map[string][]*protocol.Result) {
	groups = map[string][]*protocol.Result{}
	byID := map[string]string{}
	for _, r := range rs {
		id := r.Run
		if r.Source.CIRunID > 0 {
			id = "ci:" + strconv.FormatInt(r.Source.CIRunID, 10)
		}
		name, ok := byID[id]
		if !ok {
			name = FileName(r)
			byID[id] = name
			names = append(names, name)
		}
		groups[name] = append(groups[name], r)
	}
	return names, groups
}
