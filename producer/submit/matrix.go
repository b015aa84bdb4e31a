package submit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/internal/yamlerr"
	"github.com/benchfleet/benchfleet/protocol"
)

// Matrix is a parsed matrix file: a run's defaults, the axes that multiply
// out into jobs, and the cells to leave out.
//
//	run: nightly-2026-11-30          # optional; default derived
//	source: {project: tt-forge-onnx, repo: ..., commit: ..., branch: main}
//	# source.wheels: [{url: builds/sha256/<hex>/<name>.whl, sha256: <hex>}]
//	defaults:                         # any job field, labels included
//	  priority: low
//	  benchmark: {loop_count: 32, data_format: bfloat16}
//	  limits: {timeout: 20m, pcc_min: 0.99}
//	  labels: {team: compiler}
//	matrix:
//	  pool: [n150, p150]
//	  benchmark:
//	    - {model: resnet50, test: forge/test/benchmark/test_vision.py::test_resnet50}
//	  batch_size: [1, 8]
//	  data_format: [bfloat16, float32]
//	exclude:
//	  - {pool: p150, batch_size: 1}
type Matrix struct {
	Run      string            `yaml:"run"`
	Source   SourceSpec        `yaml:"source"`
	Defaults JobSpec           `yaml:"defaults"`
	Axes     Axes              `yaml:"matrix"`
	Exclude  []map[string]any  `yaml:"exclude"`
	Labels   map[string]string `yaml:"labels"`
}

// Axes multiply out: every pool × benchmark × batch size × data format.
// An empty axis takes the value from defaults.
type Axes struct {
	Pool       []string        `yaml:"pool"`
	Benchmark  []BenchmarkSpec `yaml:"benchmark"`
	BatchSize  []int           `yaml:"batch_size"`
	DataFormat []string        `yaml:"data_format"`
}

// SourceSpec is the YAML form of protocol.Source.
type SourceSpec struct {
	Project string `yaml:"project"`
	Repo    string `yaml:"repo"`
	Commit  string `yaml:"commit"`
	Branch  string `yaml:"branch"`
	Build   struct {
		URL    string `yaml:"url"`
		SHA256 string `yaml:"sha256"`
	} `yaml:"build"`
	// Wheels are the build under test (protocol.Source.Wheels): store keys
	// builds/sha256/<hex>/<name>.whl. Left out of the JSON when empty, so
	// the run id of a matrix without wheels is as it was.
	Wheels []WheelSpec `yaml:"wheels" json:",omitempty"`
}

// WheelSpec is the YAML form of protocol.Wheel.
type WheelSpec struct {
	URL    string `yaml:"url"`
	SHA256 string `yaml:"sha256"`
}

// JobSpec is the YAML form of the fields a job can default.
type JobSpec struct {
	Pool      string            `yaml:"pool"`
	Runner    string            `yaml:"runner"`
	Priority  string            `yaml:"priority"`
	Benchmark BenchmarkSpec     `yaml:"benchmark"`
	Limits    LimitsSpec        `yaml:"limits"`
	Labels    map[string]string `yaml:"labels"`
}

// BenchmarkSpec is the YAML form of protocol.Benchmark. Zero fields are
// unset and take the value from defaults.
type BenchmarkSpec struct {
	Test        string `yaml:"test"`
	Model       string `yaml:"model"`
	BatchSize   int    `yaml:"batch_size"`
	LoopCount   int    `yaml:"loop_count"`
	WarmupCount int    `yaml:"warmup_count"`
	DataFormat  string `yaml:"data_format"`
	Training    bool   `yaml:"training"`
	InputSize   int    `yaml:"input_size"`
}

// LimitsSpec is the YAML form of protocol.Limits.
type LimitsSpec struct {
	Timeout string  `yaml:"timeout"`
	PCCMin  float64 `yaml:"pcc_min"`
}

// ParseMatrix strictly decodes a matrix file: unknown keys, wrong types and
// trailing documents are errors that name the key and line.
func ParseMatrix(data []byte) (*Matrix, error) {
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("matrix: file is %d bytes, over the 1 MiB limit", len(data))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var m Matrix
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("matrix: the file is empty")
		}
		return nil, fmt.Errorf("matrix: %w", yamlerr.CleanSource(data, err))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("matrix: only one YAML document is allowed")
	}
	for i, ex := range m.Exclude {
		for k := range ex {
			if !excludeKeys[k] {
				return nil, fmt.Errorf("matrix: exclude[%d]: unknown key %q (want one of %s)", i, k, strings.Join(sortedKeys(excludeKeys), ", "))
			}
		}
	}
	return &m, nil
}

var excludeKeys = map[string]bool{"pool": true, "runner": true, "model": true, "test": true, "batch_size": true, "data_format": true}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Jobs expands the matrix into jobs for run (ids derived from run and each
// cell; created_at left to Submit). Every job is validated; the first bad
// one is reported with its cell.
func (m *Matrix) Jobs(run string) ([]*protocol.Job, error) {
	pools := m.Axes.Pool
	if len(pools) == 0 {
		pools = []string{m.Defaults.Pool}
	}
	benches := m.Axes.Benchmark
	if len(benches) == 0 {
		benches = []BenchmarkSpec{{}}
	}
	batches := m.Axes.BatchSize
	if len(batches) == 0 {
		batches = []int{0}
	}
	formats := m.Axes.DataFormat
	if len(formats) == 0 {
		formats = []string{""}
	}
	// Count the cells before building any (the product of four lengths
	// under the limit cannot overflow: each factor is checked first).
	cells := 1
	for _, n := range []int{len(pools), len(benches), len(batches), len(formats)} {
		if n > protocol.MaxMatrixCells || cells*n > protocol.MaxMatrixCells {
			return nil, fmt.Errorf("matrix: %d pools × %d benchmarks × %d batch sizes × %d data formats is over the limit of %d cells per run (split the matrix into several runs)",
				len(pools), len(benches), len(batches), len(formats), protocol.MaxMatrixCells)
		}
		cells *= n
	}
	jobs := make([]*protocol.Job, 0, cells)
	seen := map[string]bool{}
	for _, pool := range pools {
		for _, b := range benches {
			for _, bs := range batches {
				for _, df := range formats {
					spec := m.Defaults
					spec.Pool = pool
					spec.Benchmark = overlay(spec.Benchmark, b)
					if bs != 0 {
						spec.Benchmark.BatchSize = bs
					}
					if df != "" {
						spec.Benchmark.DataFormat = df
					}
					spec.Labels = mergeLabels(m.Labels, spec.Labels)
					j, err := spec.Job(run, m.Source)
					if err != nil {
						return nil, err
					}
					if m.excluded(j) {
						continue
					}
					if seen[j.ID] {
						continue // the same cell twice
					}
					seen[j.ID] = true
					jobs = append(jobs, j)
				}
			}
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("matrix: every cell is excluded; nothing to run")
	}
	return jobs, nil
}

func overlay(base, top BenchmarkSpec) BenchmarkSpec {
	if top.Test != "" {
		base.Test = top.Test
	}
	if top.Model != "" {
		base.Model = top.Model
	}
	if top.BatchSize != 0 {
		base.BatchSize = top.BatchSize
	}
	if top.LoopCount != 0 {
		base.LoopCount = top.LoopCount
	}
	if top.WarmupCount != 0 {
		base.WarmupCount = top.WarmupCount
	}
	if top.DataFormat != "" {
		base.DataFormat = top.DataFormat
	}
	if top.Training {
		base.Training = true
	}
	if top.InputSize != 0 {
		base.InputSize = top.InputSize
	}
	return base
}

func mergeLabels(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func (m *Matrix) excluded(j *protocol.Job) bool {
	for _, ex := range m.Exclude {
		match := true
		for k, v := range ex {
			got := ""
			switch k {
			case "pool":
				got = j.Pool
			case "runner":
				got = j.Runner
			case "model":
				got = j.Benchmark.Model
			case "test":
				got = j.Benchmark.Test
			case "batch_size":
				got = strconv.Itoa(j.Benchmark.BatchSize)
			case "data_format":
				got = j.Benchmark.DataFormat
			}
			if fmt.Sprint(v) != got {
				match = false
				break
			}
		}
		if match && len(ex) > 0 {
			return true
		}
	}
	return false
}

// Job turns the spec into a normalized, validated job of run.
func (s JobSpec) Job(run string, src SourceSpec) (*protocol.Job, error) {
	j := &protocol.Job{
		Schema:   protocol.SchemaJob,
		Run:      run,
		Pool:     s.Pool,
		Runner:   s.Runner,
		Priority: protocol.Priority(s.Priority),
		Benchmark: protocol.Benchmark{
			Test: s.Benchmark.Test, Model: s.Benchmark.Model, BatchSize: s.Benchmark.BatchSize,
			LoopCount: s.Benchmark.LoopCount, WarmupCount: s.Benchmark.WarmupCount,
			DataFormat: s.Benchmark.DataFormat, Training: s.Benchmark.Training, InputSize: s.Benchmark.InputSize,
		},
		Source: protocol.Source{Project: src.Project, Repo: src.Repo, Commit: src.Commit, Branch: src.Branch,
			Build: protocol.Build{URL: src.Build.URL, SHA256: src.Build.SHA256}, Wheels: src.wheels()},
		Limits: protocol.Limits{PCCMin: s.Limits.PCCMin},
		Labels: s.Labels,
	}
	if j.Runner == "" {
		j.Runner = protocol.DefaultRunner(j.Pool)
	}
	if s.Limits.Timeout != "" {
		d, err := time.ParseDuration(s.Limits.Timeout)
		if err != nil {
			return nil, &protocol.FieldError{Field: "limits.timeout", Rule: fmt.Sprintf("must be a duration like 30m (got %q)", s.Limits.Timeout)}
		}
		j.Limits.Timeout = protocol.Duration(d)
	}
	j.Normalize()
	_, j.ID = j.CellID()
	j.CreatedAt = time.Unix(0, 0).UTC() // placeholder so Validate passes; Submit sets it
	if err := j.Validate(); err != nil {
		// What is wrong first; the cell it is wrong in after it.
		return nil, fmt.Errorf("%w (in job %s: %s)", err, j.ID, j.Cell())
	}
	j.CreatedAt = time.Time{}
	return j, nil
}

// wheels is the spec's wheels as a job names them (nil for none).
func (s SourceSpec) wheels() []protocol.Wheel {
	if len(s.Wheels) == 0 {
		return nil
	}
	out := make([]protocol.Wheel, len(s.Wheels))
	for i, w := range s.Wheels {
		out[i] = protocol.Wheel{URL: w.URL, SHA256: w.SHA256}
	}
	return out
}
