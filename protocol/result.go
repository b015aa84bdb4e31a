package protocol

import (
	"bytes"
	"encoding/json"
	gojson "github.com/goccy/go-json"
	"strings"
	"time"
)

// Status is the outcome of a job.
type Status string

// The statuses a Result can have.
const (
	StatusPassed    Status = "passed"
	StatusFailed    Status = "failed"
	StatusError     Status = "error"
	StatusTimeout   Status = "timeout"
	StatusCancelled Status = "cancelled"
)

// Error classes of a Result's error.
const (
	ClassInvalid   = "invalid"   // the job itself is wrong; no retry
	ClassBenchmark = "benchmark" // the benchmark failed (PCC, test failure); no retry
	ClassInfra     = "infra"     // device, timeout, crash, storage; retried
	ClassCancelled = "cancelled" // the run was cancelled
	// ClassJob: the job brought about its own end (its harness crashed, or
	// it hit a limit of its box: tasks, memory, disk) and the board passed
	// its check afterwards; status failed, no retry, the board not blamed.
	ClassJob = "job"
	// ClassDeadLetter: the job was dead-lettered (its deliveries ran out);
	// the result (status error) is the dead letter's, and a later attempt
	// after a deliberate re-queue (`dlq retry`) replaces it.
	ClassDeadLetter = "dead-letter"
)

// Result is the durable record of one job: written once to storage at
// results/v1/date=<run date>/run=<run>/<job>.json.
type Result struct {
	Schema       string       `json:"schema"`
	Job          string       `json:"job"`
	Run          string       `json:"run"`
	RunCreatedAt time.Time    `json:"run_created_at"`
	Pool         string       `json:"pool"`
	Runner       string       `json:"runner"`
	Status       Status       `json:"status"`
	Error        *ResultError `json:"error,omitempty"`
	Attempt      int          `json:"attempt"`
	StartedAt    time.Time    `json:"started_at"`
	FinishedAt   time.Time    `json:"finished_at"`
	Worker       WorkerRef    `json:"worker"`
	Device       DeviceRef    `json:"device"`
	Benchmark    Benchmark    `json:"benchmark"`
	Source       Source       `json:"source,omitzero"`
	// Build says what was measured: the job's provisioned build (its
	// wheels, its commit's test tree) or the host's installed one.
	Build        *BuildInfo   `json:"build,omitempty"`
	Phases       Phases       `json:"phases"`
	Measurements Measurements `json:"measurements"`
	// Metrics are the run's figures by name, each with its unit and the
	// direction that is better (metrics.go's registry); absent in results
	// written before them and in runs that measured nothing (MetricsOf
	// reads those from Measurements).
	Metrics  Metrics `json:"metrics,omitempty"`
	PCC      PCC     `json:"pcc"`
	Upstream string  `json:"upstream,omitempty"`
	// Report holds what the upstream harness's report says about the run
	// (its model name, config, device info); absent for built-in runners
	// and failed runs (the harness writes no report then).
	Report *UpstreamReport `json:"report,omitempty"`
	// Telemetry is the board's power and temperature during the timed
	// loop; absent when the slot has no sensors (cpu, sim) or no sample
	// fell in the timed loop.
	Telemetry *Telemetry        `json:"telemetry,omitempty"`
	Artifacts []Artifact        `json:"artifacts,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Trust is "untrusted" when the worker claimed the job from the
	// untrusted producer's stream (StreamUntrusted); absent means trusted
	// (claimed from StreamJobs, or written before the field existed).
	// The worker sets it from where it claimed the job, never from the
	// job's payload. An untrusted result never enters a baseline.
	Trust Trust `json:"trust,omitempty"`
	// Notes are facts about the run a reader of the result must know
	// because they qualify its figures, one sentence each (the harness
	// ran another batch size than the job asked for; the board power
	// covers only some of its chips). Absent when there are none.
	Notes []string `json:"notes,omitempty"`
}

// UpstreamReport is the part of an upstream harness report (its
// --output-file) a Result keeps as facts, so exports map them instead of
// guessing. Fields mirror the report's keys; a key the report lacks is
// absent.
type UpstreamReport struct {
	// Model is the report's "model", e.g. onnx_resnet_resnet_50_hf_cv_image_cls_hf.
	Model     string `json:"model,omitempty"`
	ModelType string `json:"model_type,omitempty"`
	RunType   string `json:"run_type,omitempty"`
	// NumLayers, InputSequenceLength, OutputSequenceLength as reported
	// (upstream writes -1 for unknown).
	NumLayers            *int   `json:"num_layers,omitempty"`
	BatchSize            *int   `json:"batch_size,omitempty"`
	InputSequenceLength  *int   `json:"input_sequence_length,omitempty"`
	OutputSequenceLength *int   `json:"output_sequence_length,omitempty"`
	Precision            string `json:"precision,omitempty"`
	DatasetName          string `json:"dataset_name,omitempty"`
	ProfileName          string `json:"profile_name,omitempty"`
	ImageDimension       string `json:"image_dimension,omitempty"`
	PerfAnalysis         *bool  `json:"perf_analysis,omitempty"`
	Project              string `json:"project,omitempty"`
	// Config and DeviceInfo are the report's objects as they are.
	Config     map[string]any `json:"config,omitempty"`
	DeviceInfo map[string]any `json:"device_info,omitempty"`
	// Measurements are the report's own measurements, as written.
	Measurements []UpstreamMeasurement `json:"measurements,omitempty"`
}

// UpstreamMeasurement is one entry of a report's measurements.
type UpstreamMeasurement struct {
	Iteration               int     `json:"iteration"`
	StepName                string  `json:"step_name"`
	StepWarmUpNumIterations int     `json:"step_warm_up_num_iterations"`
	Name                    string  `json:"measurement_name"`
	Value                   float64 `json:"value"`
	Target                  float64 `json:"target"`
}

// Telemetry summarizes a board's sensors over the timed loop.
type Telemetry struct {
	// Samples is how many readings fell in the timed loop.
	Samples int `json:"samples"`
	// PowerW is the board's power in watts (absent if not reported).
	PowerW *Stat `json:"power_w,omitempty"`
	// TemperatureC is the hottest chip's temperature in °C (absent if not
	// reported).
	TemperatureC *Stat `json:"temperature_c,omitempty"`
	// Source is where the readings came from: "hwmon" (tt-kmd sysfs) or
	// "tt-smi" (its snapshot).
	Source string `json:"source,omitempty"`
	// PowerChips is how many of the board's chips PowerW covers (tt-kmd
	// registers hwmon per PCI function: on an n300 only the L chip has
	// it, so the power is that chip's); absent (0) when unknown or when
	// there is no power reading. Compare DeviceRef.Chips.
	PowerChips int `json:"power_chips,omitempty"`
}

// Stat is the min, mean and max of a series of readings.
type Stat struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// ResultError says why a job did not pass.
type ResultError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

// WorkerRef names the worker that produced a result.
type WorkerRef struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	// Version is the worker's benchfleet module version ("v1.4.0", a Go
	// pseudo-version, or "devel" when its build recorded none; "dev" from
	// workers older than Revision).
	Version string `json:"version"`
	// Revision is the commit the worker's benchfleet was built from (40
	// hex digits, "+modified" appended when its tree had local changes);
	// absent when its build recorded none, and from older workers.
	Revision string `json:"revision,omitempty"`
}

// Board names the board a result ran on as Job.Avoid names it:
// "<worker id>/<device id>".
func (r *Result) Board() string { return r.Worker.ID + "/" + r.Device.ID }

// DeviceRef describes the device a job ran on.
type DeviceRef struct {
	ID       string `json:"id"`
	Pool     string `json:"pool"`
	Arch     string `json:"arch,omitempty"`
	Chips    int    `json:"chips,omitempty"`
	Firmware string `json:"firmware,omitempty"`
}

// Phases are the durations of each phase in seconds.
type Phases struct {
	// SetupS is provisioning the job's build (tree and environment);
	// absent for a job that runs the host's build.
	SetupS   float64 `json:"setup_s,omitempty"`
	CompileS float64 `json:"compile_s"`
	WarmupS  float64 `json:"warmup_s"`
	TimingS  float64 `json:"timing_s"`
	PCCS     float64 `json:"pcc_s"`
	UploadS  float64 `json:"upload_s"`
}

// Measurements are the timed loop's figures. A figure that was not
// measured (the job failed before the timed loop) is 0 in Go and null in
// JSON; a measured one is always above 0.
type Measurements struct {
	// BatchSize is the batch the timed loop ran, as the harness's report
	// says; absent (0) when the runner has no report of its own (the
	// job's benchmark.batch_size ran). A harness may ignore the job's
	// --batch-size (tt-xla's vision tests fix theirs): then this differs
	// from benchmark.batch_size and Result.Notes says so.
	BatchSize     int         `json:"batch_size,omitempty"`
	TotalSamples  int64       `json:"total_samples"`
	TotalTimeS    float64     `json:"total_time_s"`
	SamplesPerSec float64     `json:"samples_per_sec"`
	IterationMS   IterationMS `json:"iteration_ms"`
}

// IterationMS summarizes per-iteration latencies in milliseconds, over the
// timed loop only (never the warmup).
type IterationMS struct {
	// Count is how many timed iterations the statistics cover; absent (0)
	// in results written before it existed or when none were printed.
	Count  int     `json:"count,omitempty"`
	Min    float64 `json:"min"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
}

// PCC is the accuracy check: Pearson correlation of the device output with
// the golden one.
type PCC struct {
	// Value is the correlation; 0 (null in JSON) when the check did not run.
	Value  float64 `json:"value"`
	Min    float64 `json:"min"`
	Passed bool    `json:"passed"`
}

// Artifact is a file uploaded beside a result.
type Artifact struct {
	Name   string `json:"name"`
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// MarshalJSON writes the figures that were not measured (0) as null, so
// no reader mistakes them for a measured 0.
func (m Measurements) MarshalJSON() ([]byte, error) {
	type wire struct {
		BatchSize     int          `json:"batch_size,omitempty"`
		TotalSamples  *int64       `json:"total_samples"`
		TotalTimeS    *float64     `json:"total_time_s"`
		SamplesPerSec *float64     `json:"samples_per_sec"`
		IterationMS   *IterationMS `json:"iteration_ms"`
	}
	w := wire{BatchSize: m.BatchSize, TotalSamples: nonZero(m.TotalSamples), TotalTimeS: nonZero(m.TotalTimeS), SamplesPerSec: nonZero(m.SamplesPerSec)}
	if m.IterationMS != (IterationMS{}) {
		w.IterationMS = &m.IterationMS
	}
	return json.Marshal(w)
}

// MarshalJSON writes a value of a check that did not run (0) as null.
func (p PCC) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Value  *float64 `json:"value"`
		Min    float64  `json:"min"`
		Passed bool     `json:"passed"`
	}{nonZero(p.Value), p.Min, p.Passed})
}

func nonZero[T int64 | float64](v T) *T {
	if v == 0 {
		return nil
	}
	return &v
}

// DecodeResult decodes a result, tolerating unknown fields (a newer worker may
// add some) but requiring a benchfleet.result schema.
//
// History queries decode one document per result they return, so this is
// their hot path: it uses goccy/go-json (a faster drop-in encoding/json
// decoder) on documents encoding/json's scanner finds valid,
// and encoding/json decides every other document and every one goccy
// rejects or panics on, so errors read as they did. FuzzDecodeResult checks
// that it accepts only what encoding/json accepts and reads the documents
// encoding/json writes (all that benchfleet stores) exactly as it does; a
// hand-made document with duplicate or case-variant keys may pick another
// of its values, in the index and the JSON scan alike.
func DecodeResult(data []byte) (*Result, error) {
	return decodeResult(data, false)
}

// DecodeCheckedResult is DecodeResult for a document already checked to be
// valid JSON: the index's doc column, which compaction wrote through
// encoding/json's Compact (it rejects invalid JSON). It skips the validity
// scan, about a seventh of a history query's time; everything else is
// DecodeResult's. On a document damaged since (the pages carry no
// checksum), the fast decoder may skip malformed bytes inside a field it
// does not know instead of rejecting the document; every field it keeps
// is decoded as DecodeResult would.
func DecodeCheckedResult(data []byte) (*Result, error) {
	return decodeResult(data, true)
}

func decodeResult(data []byte, checked bool) (*Result, error) {
	var r Result
	if !(checked || validJSON(data)) || !foldFreeKeys(data) || !fastUnmarshal(data, &r) {
		r = Result{}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, &decodeError{kind: "result", err: err}
		}
	}
	if !strings.HasPrefix(r.Schema, "benchfleet.result/") {
		return nil, fieldErr("schema", "must be %q (got %q)", SchemaResult, truncate(r.Schema, 40))
	}
	if err := ValidID("job", r.Job); err != nil {
		return nil, err
	}
	if err := ValidID("run", r.Run); err != nil {
		return nil, err
	}
	return &r, nil
}

// goccy/go-json compiles a type's decoder on its first use and stores it
// in a table read and written without synchronisation (goccy/go-json
// issues #495 and #566: concurrent first uses race). Decoding one Result
// here, while the package initialises and before any goroutine of ours
// can call DecodeResult, compiles the only decoder fastUnmarshal ever uses
// (that of *Result, with every nested type inside it), so later calls only
// read the table.
func init() {
	var r Result
	fastUnmarshal([]byte(`{"schema":"benchfleet.result/v1","job":"j","run":"r","labels":{"a":"b"},"artifacts":[{"name":"n"}],"report":{},"telemetry":{}}`), &r)
}

// foldFreeKeys reports whether no object key of data (valid JSON) holds
// an upper-case letter, an escape or a non-ASCII byte. encoding/json
// matches such a key to a field case-insensitively (Unicode folding:
// "LABELS", "\u006cabels", "ſchema"); the fast decoder ignores it, so a
// document with one is decoded by encoding/json. Values are not looked at
// (a timestamp's T and Z are fine).
func foldFreeKeys(data []byte) bool {
	for i := 0; i < len(data); i++ {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return true
		}
		j := i + q + 1
		folded := false
		for ; j < len(data) && data[j] != '"'; j++ {
			switch c := data[j]; {
			case c == '\\':
				folded = true
				j++
			case 'A' <= c && c <= 'Z', c >= 0x80:
				folded = true
			}
		}
		k := j + 1
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
			k++
		}
		if folded && k < len(data) && data[k] == ':' {
			return false
		}
		i = j
	}
	return true
}

// fastUnmarshal decodes data into v (always a *Result: see init) with
// goccy/go-json and reports whether it succeeded; a panic inside the
// decoder counts as a failure.
func fastUnmarshal(data []byte, v *Result) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return gojson.Unmarshal(data, v) == nil
}

// Untrusted reports whether r is of the untrusted producer: claimed from
// its stream (Trust), or of a run named as its runs are (UntrustedRun:
// before StreamUntrusted existed, that producer's jobs went to
// StreamJobs). Such a result is judged against trusted baselines but
// never enters one.
func (r *Result) Untrusted() bool { return r.Trust.Untrusted() || UntrustedRun(r.Run) }
