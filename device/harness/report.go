package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// MaxReportBytes bounds the upstream report ParseReport accepts. A real
// report is a few kilobytes; anything near this limit is not one.
const MaxReportBytes = 16 << 20

// Measurement names the runner reads from a report.
const (
	MeasurementTotalSamples = "total_samples"
	MeasurementTotalTime    = "total_time"
)

// Report is an upstream harness's --output-file: one JSON object written
// only when the test passed, by create_benchmark_result in
// tt-forge-onnx forge/test/benchmark/utils.py and tt-xla
// tests/benchmark/reporting.py (same keys; tt-xla has no pcc and writes
// device_type null). Only the fields benchfleet uses are typed; the
// file itself is kept verbatim as the "report.json" artifact.
type Report struct {
	Model        string           `json:"model"`
	ModelType    string           `json:"model_type"`
	RunType      string           `json:"run_type"`
	Config       map[string]any   `json:"config"`
	BatchSize    int              `json:"batch_size"`
	Precision    string           `json:"precision"`
	DatasetName  string           `json:"dataset_name"`
	ImageDim     string           `json:"image_dimension"`
	Measurements []Measurement    `json:"measurements"`
	DeviceInfo   ReportDeviceInfo `json:"device_info"`
	PCC          *float64         `json:"pcc"`
	Project      string           `json:"project"`
	ModelRawName string           `json:"model_rawname"`
}

// Measurement is one entry of a report's measurements array.
type Measurement struct {
	Iteration               int     `json:"iteration"`
	StepName                string  `json:"step_name"`
	StepWarmUpNumIterations int     `json:"step_warm_up_num_iterations"`
	Name                    string  `json:"measurement_name"`
	Value                   float64 `json:"value"`
	Target                  float64 `json:"target"`
	DevicePower             float64 `json:"device_power"`
	DeviceTemperature       float64 `json:"device_temperature"`
}

// ReportDeviceInfo is a report's device_info object.
type ReportDeviceInfo struct {
	DeviceName  string `json:"device_name"`
	Arch        string `json:"arch"`
	DeviceCount int    `json:"device_count"`
	DeviceType  string `json:"device_type"`
}

// Value returns the value of the first measurement called name.
func (r *Report) Value(name string) (float64, bool) {
	for _, m := range r.Measurements {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// TotalSamples is the report's total_samples measurement.
func (r *Report) TotalSamples() int64 {
	v, _ := r.Value(MeasurementTotalSamples)
	return int64(v)
}

// TotalTime is the report's total_time measurement in seconds.
func (r *Report) TotalTime() float64 {
	v, _ := r.Value(MeasurementTotalTime)
	return v
}

// SamplesPerSec is total_samples / total_time, exactly as the upstream
// harness defines it.
func (r *Report) SamplesPerSec() float64 {
	return float64(r.TotalSamples()) / r.TotalTime()
}

// Upstream returns the report's facts as a Result keeps them: its scalar
// keys, and config and device_info as they are. raw is the report's bytes.
// A report larger than maxUpstreamBytes (a real one is a few kilobytes)
// keeps only its scalar keys: the harness is untrusted, and a Result must
// stay small.
func Upstream(raw []byte) *protocol.UpstreamReport {
	var u protocol.UpstreamReport
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil
	}
	if len(raw) > maxUpstreamBytes {
		u.Config, u.DeviceInfo, u.Measurements = nil, nil, nil
	}
	return &u
}

const maxUpstreamBytes = 64 << 10

// outcome is the device.Outcome of a report whose harness passed its own
// accuracy check with pcc, requiring required (0 when it did not say).
func (r *Report) outcome(raw []byte, pcc, required float64) *device.Outcome {
	return &device.Outcome{
		Report: Upstream(raw),
		Measurements: protocol.Measurements{
			BatchSize:     r.BatchSize,
			TotalSamples:  r.TotalSamples(),
			TotalTimeS:    r.TotalTime(),
			SamplesPerSec: r.SamplesPerSec(),
		},
		PCCValue:    pcc,
		PCCJudged:   true,
		PCCRequired: required,
		Arch:        r.DeviceInfo.Arch,
	}
}

// ErrReport matches every error ParseReport returns.
var ErrReport = errors.New("harness: bad upstream report")

type reportError struct{ msg string }

func (e *reportError) Error() string        { return "harness: bad upstream report: " + e.msg }
func (e *reportError) Is(target error) bool { return target == ErrReport }

func badReport(format string, args ...any) error {
	return &reportError{msg: fmt.Sprintf(format, args...)}
}

// ParseReport decodes and checks an upstream report. Unknown fields are
// tolerated (upstream adds some between versions); what benchfleet relies on
// is checked: one JSON object, a measurements array with finite values, a
// positive integral total_samples and a positive total_time, a pcc in
// [-1, 1] when present, and string-typed names. Errors match ErrReport and
// name the offending field.
func ParseReport(data []byte) (*Report, error) {
	if len(data) > MaxReportBytes {
		return nil, badReport("%d bytes, over the %d byte limit", len(data), MaxReportBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, badReport("empty file")
	}
	if trimmed[0] != '{' {
		return nil, badReport("not a JSON object (starts with %q)", preview(trimmed))
	}
	if bytes.Contains(trimmed, []byte("NaN")) || bytes.Contains(trimmed, []byte("Infinity")) {
		// Python's json.dump writes NaN/Infinity literals that are not JSON;
		// name them instead of reporting a syntax error at some offset.
		if err := json.Unmarshal(trimmed, new(any)); err != nil {
			return nil, badReport("contains a NaN or Infinity literal (not JSON): %v", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var r Report
	if err := dec.Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badReport("field %s: JSON %s where %s was expected", te.Field, te.Value, te.Type)
		}
		return nil, badReport("%v", err)
	}
	if dec.More() {
		return nil, badReport("trailing data after the JSON object")
	}
	if r.Measurements == nil {
		return nil, badReport("measurements: missing")
	}
	for i, m := range r.Measurements {
		if m.Name == "" {
			return nil, badReport("measurements[%d].measurement_name: missing", i)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"value", m.Value}, {"target", m.Target}, {"device_power", m.DevicePower}, {"device_temperature", m.DeviceTemperature}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return nil, badReport("measurements[%d].%s: not a finite number", i, f.name)
			}
		}
	}
	samples, ok := r.Value(MeasurementTotalSamples)
	if !ok {
		return nil, badReport("measurements: no %q entry", MeasurementTotalSamples)
	}
	if samples <= 0 || samples != math.Trunc(samples) || samples > 1<<53 {
		return nil, badReport("measurements: %s = %v, want a positive integer", MeasurementTotalSamples, samples)
	}
	total, ok := r.Value(MeasurementTotalTime)
	if !ok {
		return nil, badReport("measurements: no %q entry", MeasurementTotalTime)
	}
	if total <= 0 {
		return nil, badReport("measurements: %s = %v, want a positive number of seconds", MeasurementTotalTime, total)
	}
	if r.BatchSize < 0 || r.BatchSize > protocol.MaxBatchSize {
		return nil, badReport("batch_size: %d is not a batch size (1..%d)", r.BatchSize, protocol.MaxBatchSize)
	}
	if r.PCC != nil {
		if p := *r.PCC; math.IsNaN(p) || p < -1 || p > 1 {
			return nil, badReport("pcc: %v is not in [-1, 1]", p)
		}
	}
	if a := r.DeviceInfo.Arch; a != "" && strings.ContainsAny(a, "\x00\n\r") {
		return nil, badReport("device_info.arch: control characters")
	}
	return &r, nil
}

func preview(b []byte) string {
	if len(b) > 16 {
		b = b[:16]
	}
	return string(b)
}
