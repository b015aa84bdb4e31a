package protocol

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cellByFmt is the form job ids hash (the whole content but the id,
// created_at and priority), written with fmt as it first was: Cell must keep producing exactly it, or every id of
// a run submitted before would change.
func cellByFmt(j *Job) string {
	keys := make([]string, 0, len(j.Labels))
	for k := range j.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "pool=%s runner=%s test=%s model=%s batch=%d loop=%d warmup=%d format=%s training=%t input=%d",
		j.Pool, j.Runner, j.Benchmark.Test, j.Benchmark.Model, j.Benchmark.BatchSize, j.Benchmark.LoopCount,
		j.Benchmark.WarmupCount, j.Benchmark.DataFormat, j.Benchmark.Training, j.Benchmark.InputSize)
	fmt.Fprintf(&b, " timeout=%s pcc_min=%s", j.Limits.Timeout.D(), strconv.FormatFloat(j.Limits.PCCMin, 'g', -1, 64))
	fmt.Fprintf(&b, " source=%q,%q,%q,%q,%q,%q", j.Source.Project, j.Source.Repo, j.Source.Commit, j.Source.Branch,
		j.Source.Build.URL, j.Source.Build.SHA256)
	for _, k := range keys {
		fmt.Fprintf(&b, " label.%s=%q", k, j.Labels[k])
	}
	return b.String()
}

func cellJobs() []*Job {
	return []*Job{
		{},
		{Run: "r1", Pool: "sim", Runner: "sim", Benchmark: Benchmark{Model: "noop", BatchSize: 1, LoopCount: 1, WarmupCount: 1, DataFormat: "bfloat16"},
			Limits: Limits{PCCMin: 0.99}, Labels: map[string]string{"i": "7", "sim.duration": "0s"}},
		{Run: "nightly-2026", Pool: "n150", Runner: "forge", Benchmark: Benchmark{Test: "forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]",
			Model: "resnet50", BatchSize: 8, LoopCount: 128, WarmupCount: 32, DataFormat: "float32", Training: true, InputSize: 224},
			Limits: Limits{Timeout: Duration(90 * time.Minute), PCCMin: 1e-7},
			Source: Source{Project: "tt-forge/tt-forge-onnx", Repo: "o/r", Commit: "abc\"def", Branch: "feature/ü\tx", Build: Build{URL: "https://x/y?a=b&c", SHA256: "00ff"}},
			Labels: map[string]string{"team": "compiler", "note": "a \"quoted\" value\\ with ✓ and \x7f", "z": "", "A": "1"}},
		{Run: "x", Labels: map[string]string{"only": "one"}, Limits: Limits{Timeout: Duration(1500 * time.Millisecond), PCCMin: 0.123456789012345678}},
	}
}

func TestCellForm(t *testing.T) {
	for i, j := range cellJobs() {
		want := cellByFmt(j)
		if got := j.Cell(); got != want {
			t.Errorf("job %d: Cell\n got %q\nwant %q", i, got, want)
		}
		cell, id := j.CellID()
		if cell != want || id != JobID(j.Run, want) {
			t.Errorf("job %d: CellID = %q, %s; want %q, %s", i, cell, id, want, JobID(j.Run, want))
		}
	}
}

func FuzzCellForm(f *testing.F) {
	f.Add("sim", "noop", "k", "v", "main", int64(0), 0.99, 8, true)
	f.Add("n150", "resnet50", "a.b", "\"\x00ü", "br\nanch", int64(time.Hour), 1e-300, -3, false)
	f.Fuzz(func(t *testing.T, pool, model, k, v, branch string, timeout int64, pcc float64, batch int, training bool) {
		j := &Job{Run: "r", Pool: pool, Runner: pool, Benchmark: Benchmark{Model: model, BatchSize: batch, LoopCount: batch * 3, Training: training},
			Limits: Limits{Timeout: Duration(timeout), PCCMin: pcc}, Source: Source{Branch: branch},
			Labels: map[string]string{k: v, k + "2": branch}}
		if got, want := j.Cell(), cellByFmt(j); got != want {
			t.Fatalf("Cell\n got %q\nwant %q", got, want)
		}
	})
}

// The byte-class checks accept exactly what the regexps they replaced did.
func TestShapedMatchesRegexps(t *testing.T) {
	cases := []struct {
		name string
		re   *regexp.Regexp
		fn   func(string) bool
	}{
		{"id", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`), func(s string) bool { return shaped(s, classAlnum, classID, 0) }},
		{"runner", regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`), ValidRunnerName},
		{"model", regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`), func(s string) bool { return shaped(s, classLowerDigit, classModel, 64) }},
		{"label key", regexp.MustCompile(`^[A-Za-z0-9_.-]+$`), func(s string) bool { return shaped(s, classLabelKey, classLabelKey, 0) }},
	}
	inputs := []string{"", "a", "A", "0", "-", "_", ".", "a-b", "a_b", "a.b", "Ab", "aB", "a b", "a\n", "\na", "a/b", "ü", "aü",
		"a\x00", "z9", "9z", "-a", "_a", ".a", "a-", strings.Repeat("a", 31), strings.Repeat("a", 32), strings.Repeat("a", 33),
		strings.Repeat("b", 63), strings.Repeat("b", 64), strings.Repeat("b", 65), "sim", "tt-xla", "resnet50", "sim.duration", "j0123abcd"}
	for b := 0; b < 256; b++ {
		inputs = append(inputs, string([]byte{byte(b)}), "a"+string([]byte{byte(b)}))
	}
	for _, c := range cases {
		for _, s := range inputs {
			if got, want := c.fn(s), c.re.MatchString(s); got != want {
				t.Errorf("%s %q: %t, regexp says %t", c.name, s, got, want)
			}
		}
	}
}
