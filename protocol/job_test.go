package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// validJob is a normalized job that passes Validate.
func validJob() *protocol.Job {
	j := &protocol.Job{
		Schema: protocol.SchemaJob, ID: "j0123456789abcdef", Run: "run-1",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Pool:      "cpu", Priority: protocol.PriorityNormal, Runner: protocol.RunnerCPU,
		Benchmark: protocol.Benchmark{Model: "resnet50", BatchSize: 8, LoopCount: 128, WarmupCount: 32, DataFormat: protocol.FormatBfloat16},
		Limits:    protocol.Limits{PCCMin: 0.99},
		Labels:    map[string]string{"team": "compiler"},
	}
	return j
}

func TestJobValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		edit  func(j *protocol.Job)
		field string // "" = valid
	}{
		{"valid", func(j *protocol.Job) {}, ""},
		{"forge with test", func(j *protocol.Job) {
			j.Runner, j.Pool, j.Benchmark.Test = protocol.RunnerForge, "n150", "forge/test/benchmark/test_vision.py::test_resnet50"
		}, ""},
		{"parametrized test id", func(j *protocol.Job) { j.Benchmark.Test = "tests/benchmark/test_x.py::test_y[bf16-8]" }, ""},
		{"wrong schema", func(j *protocol.Job) { j.Schema = "benchfleet.job/v2" }, "schema"},
		{"empty schema", func(j *protocol.Job) { j.Schema = "" }, "schema"},
		{"empty id", func(j *protocol.Job) { j.ID = "" }, "id"},
		{"id with dot-dot slash", func(j *protocol.Job) { j.ID = "../../etc/passwd" }, "id"},
		{"id with shell metacharacters", func(j *protocol.Job) { j.ID = "j1;rm -rf /" }, "id"},
		{"id with command substitution", func(j *protocol.Job) { j.ID = "$(reboot)" }, "id"},
		{"id with subject wildcard", func(j *protocol.Job) { j.ID = "j1.>" }, "id"},
		{"id with leading dash", func(j *protocol.Job) { j.ID = "-rf" }, "id"},
		{"id too long", func(j *protocol.Job) { j.ID = strings.Repeat("a", 65) }, "id"},
		{"run with slash", func(j *protocol.Job) { j.Run = "a/b" }, "run"},
		{"run with backtick", func(j *protocol.Job) { j.Run = "`id`" }, "run"},
		{"run with space", func(j *protocol.Job) { j.Run = "a b" }, "run"},
		{"run with unicode", func(j *protocol.Job) { j.Run = "rün" }, "run"},
		{"no created_at", func(j *protocol.Job) { j.CreatedAt = time.Time{} }, "created_at"},
		{"unknown pool", func(j *protocol.Job) { j.Pool = "tpu" }, "pool"},
		{"pool with wildcard", func(j *protocol.Job) { j.Pool = "*" }, "pool"},
		{"bad priority", func(j *protocol.Job) { j.Priority = "urgent" }, "priority"},
		{"runner not a name", func(j *protocol.Job) { j.Runner = "Bash Script" }, "runner"},
		{"runner option-like", func(j *protocol.Job) { j.Runner = "-x" }, "runner"},
		{"upstream parametrized id", func(j *protocol.Job) {
			j.Benchmark.Test = "forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]"
		}, ""},
		// Some tt-forge-models versions have variant values with spaces
		// (RESNET_50_HF = "50 HF" at one commit): still a node id.
		{"parametrized id with a space", func(j *protocol.Job) {
			j.Benchmark.Test = "forge/test/benchmark/test_vision.py::test_resnet50[50 HF]"
		}, ""},
		{"test id bracket escaping", func(j *protocol.Job) { j.Benchmark.Test = "x.py::t[a/../b]" }, "benchmark.test"},
		{"test id bracket quote", func(j *protocol.Job) { j.Benchmark.Test = "x.py::t[a'b]" }, "benchmark.test"},
		{"test id newline", func(j *protocol.Job) { j.Benchmark.Test = "x.py::t[a\nb]" }, "benchmark.test"},
		{"test id not a python file", func(j *protocol.Job) { j.Benchmark.Test = "x.sh::t" }, "benchmark.test"},
		{"bad model", func(j *protocol.Job) { j.Benchmark.Model = "ResNet50" }, "benchmark.model"},
		{"model path", func(j *protocol.Job) { j.Benchmark.Model = "../resnet" }, "benchmark.model"},
		{"empty model", func(j *protocol.Job) { j.Benchmark.Model = "" }, "benchmark.model"},
		{"test escaping", func(j *protocol.Job) { j.Benchmark.Test = "../../x.py::t" }, "benchmark.test"},
		{"test absolute", func(j *protocol.Job) { j.Benchmark.Test = "/etc/x.py::t" }, "benchmark.test"},
		{"test shell", func(j *protocol.Job) { j.Benchmark.Test = "x.py::t; rm -rf ~" }, "benchmark.test"},
		{"test option injection", func(j *protocol.Job) { j.Benchmark.Test = "--co" }, "benchmark.test"},
		{"zero batch", func(j *protocol.Job) { j.Benchmark.BatchSize = 0 }, "benchmark.batch_size"},
		{"negative batch", func(j *protocol.Job) { j.Benchmark.BatchSize = -8 }, "benchmark.batch_size"},
		{"huge batch", func(j *protocol.Job) { j.Benchmark.BatchSize = protocol.MaxBatchSize + 1 }, "benchmark.batch_size"},
		{"max int batch", func(j *protocol.Job) { j.Benchmark.BatchSize = math.MaxInt }, "benchmark.batch_size"},
		{"zero loop", func(j *protocol.Job) { j.Benchmark.LoopCount = 0 }, "benchmark.loop_count"},
		{"huge loop", func(j *protocol.Job) { j.Benchmark.LoopCount = protocol.MaxLoopCount + 1 }, "benchmark.loop_count"},
		{"zero warmup", func(j *protocol.Job) { j.Benchmark.WarmupCount = 0 }, "benchmark.warmup_count"},
		{"huge warmup", func(j *protocol.Job) { j.Benchmark.WarmupCount = protocol.MaxWarmupCount + 1 }, "benchmark.warmup_count"},
		{"bad data format", func(j *protocol.Job) { j.Benchmark.DataFormat = "int8" }, "benchmark.data_format"},
		{"negative input size", func(j *protocol.Job) { j.Benchmark.InputSize = -1 }, "benchmark.input_size"},
		{"huge input size", func(j *protocol.Job) { j.Benchmark.InputSize = protocol.MaxInputSize + 1 }, "benchmark.input_size"},
		{"source newline", func(j *protocol.Job) { j.Source.Commit = "abc\nrm" }, "source.commit"},
		{"source too long", func(j *protocol.Job) { j.Source.Repo = strings.Repeat("r", 513) }, "source.repo"},
		{"negative timeout", func(j *protocol.Job) { j.Limits.Timeout = protocol.Duration(-time.Second) }, "limits.timeout"},
		{"huge timeout", func(j *protocol.Job) { j.Limits.Timeout = protocol.Duration(protocol.MaxJobTimeout + time.Second) }, "limits.timeout"},
		{"pcc over 1", func(j *protocol.Job) { j.Limits.PCCMin = 1.5 }, "limits.pcc_min"},
		{"pcc NaN", func(j *protocol.Job) { j.Limits.PCCMin = math.NaN() }, "limits.pcc_min"},
		{"label key slash", func(j *protocol.Job) { j.Labels = map[string]string{"../x": "v"} }, "labels"},
		{"label key space", func(j *protocol.Job) { j.Labels = map[string]string{"a b": "v"} }, "labels"},
		{"label key empty", func(j *protocol.Job) { j.Labels = map[string]string{"": "v"} }, "labels"},
		{"label value newline", func(j *protocol.Job) { j.Labels = map[string]string{"k": "a\nb"} }, "labels.k"},
		{"label value NUL", func(j *protocol.Job) { j.Labels = map[string]string{"k": "a\x00b"} }, "labels.k"},
		{"label value too long", func(j *protocol.Job) {
			j.Labels = map[string]string{"k": strings.Repeat("v", protocol.MaxLabelValue+1)}
		}, "labels.k"},
		{"too many labels", func(j *protocol.Job) {
			j.Labels = map[string]string{}
			for i := 0; i <= protocol.MaxLabels; i++ {
				j.Labels[fmt.Sprintf("k%d", i)] = "v"
			}
		}, "labels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := validJob()
			tc.edit(j)
			err := j.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error on %s, got none", tc.field)
			}
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Errorf("%v does not match ErrInvalid", err)
			}
			var fe *protocol.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("%v is not a *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", fe.Field, tc.field, err)
			}
			if fe.Rule == "" || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name the field and rule", err)
			}
		})
	}
}

func TestDecodeJob(t *testing.T) {
	t.Parallel()
	good, err := json.Marshal(validJob())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.DecodeJob(good); err != nil {
		t.Fatalf("valid job: %v", err)
	}
	// mutate returns good with one JSON edit applied.
	mutate := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bench := func(m map[string]any) map[string]any { return m["benchmark"].(map[string]any) }
	cases := []struct {
		name string
		data []byte
		want string // substring of the error
	}{
		{"empty", nil, "decode job"},
		{"not json", []byte("hello"), "decode job"},
		{"truncated", good[:len(good)/2], "decode job"},
		{"array", []byte(`[1,2]`), "decode job"},
		{"null", []byte(`null`), "schema"},
		{"trailing data", append(append([]byte{}, good...), []byte(` {"x":1}`)...), "trailing data"},
		{"unknown top-level field", mutate(func(m map[string]any) { m["command"] = "rm -rf /" }), `unknown field "command"`},
		{"unknown nested field", mutate(func(m map[string]any) { bench(m)["shell"] = true }), `unknown field "shell"`},
		{"wrong schema version", mutate(func(m map[string]any) { m["schema"] = "benchfleet.job/v9" }), "schema"},
		{"batch as string", mutate(func(m map[string]any) { bench(m)["batch_size"] = "8" }), "batch_size"},
		{"batch float", mutate(func(m map[string]any) { bench(m)["batch_size"] = 8.5 }), "batch_size"},
		{"batch overflows int", []byte(strings.Replace(string(good), `"batch_size":8`, `"batch_size":99999999999999999999999`, 1)), "batch_size"},
		{"negative batch", mutate(func(m map[string]any) { bench(m)["batch_size"] = -1 }), "benchmark.batch_size"},
		{"zero loop", mutate(func(m map[string]any) { bench(m)["loop_count"] = 0 }), "benchmark.loop_count"},
		{"bad timeout", mutate(func(m map[string]any) { m["limits"] = map[string]any{"timeout": "soon"} }), "duration"},
		{"labels not strings", mutate(func(m map[string]any) { m["labels"] = map[string]any{"k": 1} }), "labels"},
		{"id traversal", mutate(func(m map[string]any) { m["id"] = "../../../tmp/x" }), "id:"},
		{"over the size limit", mutate(func(m map[string]any) {
			m["source"] = map[string]any{"repo": strings.Repeat("x", protocol.MaxJobBytes)}
		}), "payload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := protocol.DecodeJob(tc.data)
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Errorf("%v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// A decoded job re-encodes to a document that decodes to the same job.
func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	j := validJob()
	j.Limits.Timeout = protocol.Duration(90 * time.Second)
	j.Source = protocol.Source{Project: "p", Repo: "r", Commit: "c", Branch: "b", Build: protocol.Build{URL: "https://x", SHA256: "00"}}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := protocol.DecodeJob(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cell() != j.Cell() || got.Limits != j.Limits || !reflect.DeepEqual(got.Source, j.Source) || !got.CreatedAt.Equal(j.CreatedAt) {
		t.Fatalf("round trip changed the job:\n%+v\n%+v", got, j)
	}
	// Seconds are accepted for a timeout, too.
	var d protocol.Duration
	if err := json.Unmarshal([]byte(`1.5`), &d); err != nil || d.D() != 1500*time.Millisecond {
		t.Fatalf("seconds: %v %v", d, err)
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "run-1", "ci-repo-abc123-0a1b2c", "20260101-120000-abcdef", "A_b-9"} {
		if err := protocol.ValidID("run", id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a.b", "a b", "a*", "a>", "_a", "-a", "a;b", "a|b", "a&b",
		"$(x)", "`x`", "a'b", `a"b`, "a\nb", "a\x00b", strings.Repeat("x", 65)} {
		err := protocol.ValidID("run", id)
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != "run" {
			t.Errorf("%q: want a run FieldError, got %v", id, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	j := &protocol.Job{Benchmark: protocol.Benchmark{LoopCount: 10}}
	j.Normalize()
	if j.Schema != protocol.SchemaJob || j.Priority != protocol.PriorityNormal || j.Benchmark.DataFormat != protocol.FormatBfloat16 ||
		j.Benchmark.WarmupCount != 10 || j.Limits.PCCMin != 0 {
		t.Fatalf("normalize: %+v", j)
	}
	j = &protocol.Job{Benchmark: protocol.Benchmark{LoopCount: 128}}
	j.Normalize()
	if j.Benchmark.WarmupCount != 32 {
		t.Fatalf("warmup %d, want min(32, 128)", j.Benchmark.WarmupCount)
	}
}

func TestDecodeResultAndEvent(t *testing.T) {
	t.Parallel()
	r := protocol.Result{Schema: protocol.SchemaResult, Job: "j1", Run: "r1", Status: protocol.StatusPassed}
	b, _ := json.Marshal(r)
	// Unknown fields from a newer worker are tolerated.
	b = []byte(strings.Replace(string(b), `{`, `{"future_field":{"x":1},`, 1))
	if _, err := protocol.DecodeResult(b); err != nil {
		t.Fatalf("result: %v", err)
	}
	for _, bad := range []string{`{}`, `{"schema":"benchfleet.job/v1","job":"j1","run":"r1"}`,
		`{"schema":"benchfleet.result/v1","job":"../j","run":"r1"}`, `{"schema":"benchfleet.result/v1","job":"j1","run":""}`, `nope`} {
		if _, err := protocol.DecodeResult([]byte(bad)); !errors.Is(err, protocol.ErrInvalid) {
			t.Errorf("result %s: want ErrInvalid, got %v", bad, err)
		}
	}
	if _, err := protocol.DecodeEvent([]byte(`{"schema":"benchfleet.event/v1","kind":"passed","new":1}`)); err != nil {
		t.Fatalf("event: %v", err)
	}
	if _, err := protocol.DecodeEvent([]byte(`{"kind":`)); !errors.Is(err, protocol.ErrInvalid) {
		t.Fatalf("bad event: %v", err)
	}
}

func TestSubjects(t *testing.T) {
	t.Parallel()
	pool, prio, err := protocol.ParseJobSubject(protocol.JobSubject("sim", protocol.PriorityHigh))
	if err != nil || pool != "sim" || prio != protocol.PriorityHigh {
		t.Fatalf("parse: %s %s %v", pool, prio, err)
	}
	for _, s := range []string{"", "bench.jobs", "bench.jobs.sim", "bench.events.a.b", "bench.jobs.a.b.c"} {
		if _, _, err := protocol.ParseJobSubject(s); err == nil {
			t.Errorf("%q parsed as a job subject", s)
		}
	}
	for _, p := range []string{"", "a.b", "*", ">", "a b", "x\x00"} {
		if got := protocol.DeadSubject(p); got != "bench.dead.unknown" {
			t.Errorf("DeadSubject(%q) = %q", p, got)
		}
	}
}
