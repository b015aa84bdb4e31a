package protocol

import (
	"encoding/json"
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
)

// Result is the durable record of one job: written once to storage at
// results/v1/date=<run date>/run=<run>/<job>.json.
type Result struct {
	Schema       string            `json:"schema"`
	Job          string            `json:"job"`
	Run          string            `json:"run"`
	RunCreatedAt time.Time         `json:"run_created_at"`
	Pool         string            `json:"pool"`
	Runner       string            `json:"runner"`
	Status       Status            `json:"status"`
	Error        *ResultError      `json:"error,omitempty"`
	Attempt      int               `json:"attempt"`
	StartedAt    time.Time         `json:"started_at"`
	FinishedAt   time.Time         `json:"finished_at"`
	Worker       WorkerRef         `json:"worker"`
	Device       DeviceRef         `json:"device"`
	Benchmark    Benchmark         `json:"benchmark"`
	Source       Source            `json:"source,omitzero"`
	Phases       Phases            `json:"phases"`
	Measurements Measurements      `json:"measurements"`
	PCC          PCC               `json:"pcc"`
	Upstream     string            `json:"upstream,omitempty"`
	Artifacts    []Artifact        `json:"artifacts,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
}

// ResultError says why a job did not pass.
type ResultError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

// WorkerRef names the worker that produced a result.
type WorkerRef struct {
	ID      string `json:"id"`
	Host    string `json:"host"`
	Version string `json:"version"`
}

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
	TotalSamples  int64       `json:"total_samples"`
	TotalTimeS    float64     `json:"total_time_s"`
	SamplesPerSec float64     `json:"samples_per_sec"`
	IterationMS   IterationMS `json:"iteration_ms"`
}

// IterationMS summarizes per-iteration latencies in milliseconds.
type IterationMS struct {
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
		TotalSamples  *int64       `json:"total_samples"`
		TotalTimeS    *float64     `json:"total_time_s"`
		SamplesPerSec *float64     `json:"samples_per_sec"`
		IterationMS   *IterationMS `json:"iteration_ms"`
	}
	w := wire{TotalSamples: nonZero(m.TotalSamples), TotalTimeS: nonZero(m.TotalTimeS), SamplesPerSec: nonZero(m.SamplesPerSec)}
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
func DecodeResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &decodeError{kind: "result", err: err}
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
