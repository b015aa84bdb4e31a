package submit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

const sampleMatrix = `run: nightly-1
source: {project: tt-forge-onnx, repo: tenstorrent/tt-forge-onnx, commit: abc123, branch: main}
defaults:
  priority: low
  runner: sim
  benchmark: {loop_count: 32, data_format: bfloat16}
  limits: {timeout: 20m, pcc_min: 0.99}
  labels: {team: compiler}
matrix:
  pool: [sim]
  benchmark:
    - {model: resnet50}
    - {model: mlp, input_size: 64}
  batch_size: [1, 8]
  data_format: [bfloat16, float32]
exclude:
  - {model: mlp, batch_size: 1}
`

// FuzzParseMatrix: a matrix file never panics the parser or the expansion,
// and every job it expands to is valid.
//
//	go test ./producer -run '^$' -fuzz '^FuzzParseMatrix$' -fuzztime 30s
func FuzzParseMatrix(f *testing.F) {
	f.Add([]byte(sampleMatrix))
	f.Add([]byte(""))
	f.Add([]byte("run: ../../etc\nmatrix: {pool: [cpu]}\n"))
	f.Add([]byte("defaults: {pool: cpu, benchmark: {model: mlp, batch_size: -1, loop_count: 1}}\n"))
	f.Add([]byte("matrix: {batch_size: [99999999999999999999]}\n"))
	f.Add([]byte("a: &a [*a, *a, *a, *a]\n"))
	f.Add([]byte("exclude: [{nope: 1}]\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := submit.ParseMatrix(data)
		if err != nil {
			return
		}
		run := m.Run
		if protocol.ValidID("run", run) != nil {
			run = "fuzz-run"
		}
		// Bound the expansion the fuzzer can ask for.
		if len(m.Axes.Pool)*max(1, len(m.Axes.Benchmark))*max(1, len(m.Axes.BatchSize))*max(1, len(m.Axes.DataFormat)) > 4096 {
			return
		}
		jobs, err := m.Jobs(run)
		if err != nil {
			var fe *protocol.FieldError
			if errors.As(err, &fe) && fe.Field == "" {
				t.Fatalf("field error without a field: %v", err)
			}
			return
		}
		for _, j := range jobs {
			j.CreatedAt = j.CreatedAt.AddDate(2000, 0, 0) // Submit sets it
			if err := j.Validate(); err != nil {
				t.Fatalf("expanded job is invalid: %v", err)
			}
		}
	})
}

// Bad matrix files are rejected with a message naming the key or field.
func TestParseMatrixBad(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, yaml, want string }{
		{"empty", "", "empty"},
		{"unknown key", "runs: x\n", "runs"},
		{"unknown nested key", "defaults: {benchmark: {modle: x}}\n", "modle"},
		{"wrong type", "matrix: {batch_size: [eight]}\n", "eight"},
		{"two documents", "run: a\n---\nrun: b\n", "one YAML document"},
		{"bad exclude key", "exclude: [{colour: red}]\n", "colour"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := submit.ParseMatrix([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error mentioning %q, got %v", tc.want, err)
			}
		})
	}
	// Parses, but the cells are invalid: the error names the field.
	for _, tc := range []struct{ name, yaml, field string }{
		{"negative batch", "defaults: {pool: sim, benchmark: {model: m, loop_count: 1}}\nmatrix: {batch_size: [-4]}\n", "benchmark.batch_size"},
		{"huge batch", "defaults: {pool: sim, benchmark: {model: m, loop_count: 1, batch_size: 100000000}}\n", "benchmark.batch_size"},
		{"zero loop", "defaults: {pool: sim, benchmark: {model: m, batch_size: 1}}\n", "benchmark.loop_count"},
		{"unknown pool", "defaults: {pool: tpu, benchmark: {model: m, batch_size: 1, loop_count: 1}}\n", "pool"},
		{"runner not a name", "defaults: {pool: sim, runner: 'Ba sh', benchmark: {model: m, batch_size: 1, loop_count: 1}}\n", "runner"},
		{"label escapes", "defaults: {pool: sim, labels: {'../../x': y}, benchmark: {model: m, batch_size: 1, loop_count: 1}}\n", "labels"},
		{"model path", "defaults: {pool: sim, benchmark: {model: ../m, batch_size: 1, loop_count: 1}}\n", "benchmark.model"},
		{"bad timeout", "defaults: {pool: sim, limits: {timeout: soon}, benchmark: {model: m, batch_size: 1, loop_count: 1}}\n", "limits.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := submit.ParseMatrix([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Jobs("run-1")
			var fe *protocol.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("want a FieldError on %s, got %v", tc.field, err)
			}
		})
	}
}
