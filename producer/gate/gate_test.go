package gate

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestJudge(t *testing.T) {
	t.Parallel()
	def, err := GateConfig{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	tight := gatetest.Around(1000, 0.01, 10) // 990..1010: MAD 5.55, σ 8.2, band 24.7
	noisy := gatetest.Around(1000, 0.10, 10) // 900..1100: MAD 55.5, σ 82, band 247
	cases := []struct {
		name    string
		cfg     GateConfig
		passed  bool
		value   float64
		history []float64
		want    Verdict
		change  float64 // checked when history is not empty
	}{
		{"steady", def, true, 1000, tight, VerdictOK, 0},
		{"10% slower, tight history", def, true, 900, tight, VerdictRegression, -0.10},
		{"2% slower, inside the noise", def, true, 980, tight, VerdictOK, -0.02},
		{"4% slower: outside the band, inside the threshold", def, true, 960, tight, VerdictOK, -0.04},
		{"8% slower: beyond the threshold, inside a noisy band", def, true, 920, noisy, VerdictOK, -0.08},
		{"30% slower: beyond a noisy band too", def, true, 700, noisy, VerdictRegression, -0.30},
		{"10% faster", def, true, 1100, tight, VerdictImproved, 0.10},
		{"8% faster inside a noisy band", def, true, 1080, noisy, VerdictOK, 0.08},
		{"identical history: the threshold alone decides", def, true, 940, repeat(1000, 10), VerdictRegression, -0.06},
		{"identical history, small drop", def, true, 960, repeat(1000, 10), VerdictOK, -0.04},
		{"four results are not enough", def, true, 500, tight[:4], VerdictInsufficientHistory, 0},
		{"five results are enough", def, true, 500, tight[:5], VerdictRegression, 0},
		{"no history", def, true, 1000, nil, VerdictInsufficientHistory, 0},
		{"failed job with a fine figure", def, false, 1000, tight, VerdictFailed, 0},
		{"failed job without history", def, false, 0, nil, VerdictFailed, 0},
		{"passed with no figure", def, true, 0, tight, VerdictInsufficientHistory, 0},
		{"1% threshold: 2% slower is still inside the band", GateConfig{Threshold: 0.01}, true, 980, tight, VerdictOK, -0.02},
		{"1% threshold, k=1: 2% slower is a regression", GateConfig{Threshold: 0.01, NoiseK: 1}, true, 980, tight, VerdictRegression, -0.02},
		{"min history 12 of window 20", GateConfig{Window: 20, MinHistory: 12}, true, 900, tight, VerdictInsufficientHistory, -0.10},
		// Only the last Window results count: an old fast era is ignored.
		{"window drops old results", GateConfig{Window: 5}, true, 900, append(repeat(2000, 20), repeat(900, 5)...), VerdictOK, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := tc.cfg.WithDefaults()
			if err != nil {
				t.Fatal(err)
			}
			j := cfg.Judge(tc.passed, tc.value, tc.history)
			if j.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s (baseline %.2f, change %.4f, band %.2f, n %d)", j.Verdict, tc.want, j.Baseline, j.Change, j.Band, j.N)
			}
			if tc.change != 0 && math.Abs(j.Change-tc.change) > 1e-9 {
				t.Errorf("change %.6f, want %.6f", j.Change, tc.change)
			}
		})
	}
}

func TestJudgeNoiseBand(t *testing.T) {
	t.Parallel()
	cfg, _ := GateConfig{}.WithDefaults()
	// Deviations 10,8,6,4,2,2,4,6,8,10 around 1000: median 1000, MAD 6.
	h := []float64{990, 992, 994, 996, 998, 1002, 1004, 1006, 1008, 1010}
	j := cfg.Judge(true, 1000, h)
	if j.Baseline != 1000 || math.Abs(j.Sigma-6*1.4826) > 1e-9 || math.Abs(j.Band-3*6*1.4826) > 1e-9 || j.N != 10 {
		t.Fatalf("baseline %v sigma %v band %v n %d; want 1000, %v, %v, 10", j.Baseline, j.Sigma, j.Band, j.N, 6*1.4826, 18*1.4826)
	}
	// Even count: median is the mean of the middle two.
	if got := runstate.Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Fatalf("median %v, want 2.5", got)
	}
}

func TestGateConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   GateConfig
		field string
	}{
		{GateConfig{Window: -1}, "Window"},
		{GateConfig{Threshold: 1.5}, "Threshold"},
		{GateConfig{Threshold: -0.1}, "Threshold"},
		{GateConfig{NoiseK: math.NaN()}, "NoiseK"},
		{GateConfig{Window: 3, MinHistory: 4}, "MinHistory"},
		{GateConfig{BaselineBranch: "a\nb"}, "BaselineBranch"},
	} {
		if _, err := tc.cfg.WithDefaults(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: error %v, want one naming %s", tc.cfg, err, tc.field)
		}
	}
	c, err := GateConfig{Window: 3}.WithDefaults()
	if err != nil || c.MinHistory != 3 || c.BaselineBranch != "main" || c.Threshold != 0.05 || c.NoiseK != 3 {
		t.Fatalf("defaults for window 3: %+v, %v", c, err)
	}
}

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"5%", 0.05, true}, {"0.05", 0.05, true}, {" 2.5 % ", 0.025, true}, {"99%", 0.99, true},
		{"5", 0, false}, {"0", 0, false}, {"0%", 0, false}, {"100%", 0, false}, {"-5%", 0, false},
		{"", 0, false}, {"%", 0, false}, {"five", 0, false}, {"NaN", 0, false}, {"Inf%", 0, false}, {"1e-3", 0.001, true},
	} {
		got, err := ParseThreshold(tc.in)
		if (err == nil) != tc.ok || (tc.ok && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("ParseThreshold(%q) = %v, %v; want %v ok=%t", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if FmtPercent(0.05) != "5%" || FmtPercent(0.025) != "2.5%" {
		t.Errorf("FmtPercent: %s %s", FmtPercent(0.05), FmtPercent(0.025))
	}
}

func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"5%", "0.05", "1e-3", "100%", "%", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseThreshold(s)
		if err == nil && !(v > 0 && v < 1) {
			t.Fatalf("ParseThreshold(%q) = %v without error", s, v)
		}
	})
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	vals := []float64{990, 992, 994, 996, 998, 1002, 1004, 1006, 1008, 1010}
	for i, v := range vals {
		created := now.Add(-time.Duration(len(vals)-i) * time.Hour)
		run := "h" + string(rune('a'+i))
		hist = append(hist, gatetest.HistResult(run, "net", "main", created, v))
		// Noise that must not count: another branch, another batch size,
		// a failed result, and a run created after the one gated.
		hist = append(hist, gatetest.HistResult(run, "net", "feature", created, 5000))
		other := gatetest.HistResult(run+"x", "net", "main", created, 5000)
		other.Benchmark.BatchSize = 8
		hist = append(hist, other)
	}
	failed := gatetest.HistResult("hfail", "net", "main", now.Add(-time.Minute), 1)
	failed.Status = protocol.StatusFailed
	later := gatetest.HistResult("hlater", "net", "main", now.Add(time.Hour), 1)
	self := gatetest.HistResult("run1", "net", "main", now, 1)
	// Passed only at a PCC a job set too low to mean anything:
	// it records, but no baseline holds it.
	lax := gatetest.HistResult("hlax", "net", "main", now.Add(-30*time.Minute), 5000)
	lax.PCC = protocol.PCC{Value: 0.01, Min: 1e-9, Passed: true}
	hist = append(hist, failed, later, self, lax)
	calls := 0
	history := func(_ context.Context, f index.Filter) ([]*protocol.Result, error) {
		calls++
		var out []*protocol.Result
		for _, r := range hist {
			if f.Match(r) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	g, err := NewGate(GateConfig{}, history)
	if err != nil {
		t.Fatal(err)
	}
	m := &protocol.RunManifest{Run: "run1", CreatedAt: now, Jobs: []protocol.ManifestJob{
		{ID: "ja", Model: "net", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16"},
		{ID: "jb", Model: "net", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16"},
		{ID: "jc", Model: "new", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16"},
		{ID: "jd", Model: "net", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16"},
	}}
	rows := []runstate.Row{
		{Job: "ja", Model: "net", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16", Status: protocol.StatusPassed, SamplesPerSec: 900},
		{Job: "jb", Model: "net", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16", Status: protocol.StatusPassed, SamplesPerSec: 980},
		{Job: "jc", Model: "new", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16", Status: protocol.StatusPassed, SamplesPerSec: 10},
		{Job: "jd", Model: "net", Pool: "sim", Runner: "sim", BatchSize: 4, DataFormat: "bfloat16", Status: protocol.StatusFailed, Reason: "pcc 0.4 below 0.99"},
	}
	v, err := g.Evaluate(t.Context(), m, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{VerdictRegression, VerdictOK, VerdictInsufficientHistory, VerdictFailed}
	for i, w := range want {
		if v[i].Verdict != w {
			t.Errorf("%s: verdict %s, want %s", v[i].Job, v[i].Verdict, w)
		}
	}
	if v[0].Baseline == nil || *v[0].Baseline != 1000 || v[0].History != 10 || v[0].Change == nil || math.Abs(*v[0].Change+0.1) > 1e-9 {
		t.Errorf("ja: %+v", v[0])
	}
	if v[2].Baseline != nil || v[2].Change != nil {
		t.Errorf("jc without history has a baseline: %+v", v[2])
	}
	if calls != 2 {
		t.Errorf("history read %d times, want once per model and pool (2)", calls)
	}
	// The JSON shape is the contract scripts read.
	data, _ := json.Marshal(v[2])
	if string(data) != `{"job":"jc","model":"new","pool":"sim","batch_size":4,"data_format":"bfloat16","baseline":null,"value":10,"change":null,"verdict":"insufficient-history"}` {
		t.Errorf("json: %s", data)
	}
	ApplyVerdicts(rows, v)
	rep := &RunReport{Manifest: m, Rows: rows, Verdicts: v, Gate: g.Config(), GateOn: true}
	if rep.Outcome() != OutcomeFail {
		t.Errorf("outcome with a failed job and a regression: %s, want FAIL", rep.Outcome())
	}
	rep.Rows = rows[:3]
	if rep.Outcome() != OutcomeRegression {
		t.Errorf("outcome with a regression: %s, want REGRESSION", rep.Outcome())
	}
	rep.GateOn = false
	if rep.Outcome() != OutcomePass {
		t.Errorf("outcome with the gate off: %s, want PASS", rep.Outcome())
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	now := time.Now()
	a := []*protocol.Result{gatetest.HistResult("ra", "x", "main", now, 1000), gatetest.HistResult("ra", "only-a", "main", now, 5)}
	b := []*protocol.Result{gatetest.HistResult("rb", "x", "main", now, 900), gatetest.HistResult("rb", "only-b", "main", now, 5)}
	c := Compare(a, b)
	if len(c.Rows) != 1 || c.Rows[0].Model != "x" || c.Rows[0].Change == nil || math.Abs(*c.Rows[0].Change+0.1) > 1e-9 {
		t.Fatalf("compare rows: %+v", c.Rows)
	}
	if len(c.OnlyA) != 1 || c.OnlyA[0].Model != "only-a" || len(c.OnlyB) != 1 || c.OnlyB[0].Model != "only-b" {
		t.Fatalf("only: %+v %+v", c.OnlyA, c.OnlyB)
	}
}

// The gate's options as a person writes them: an error names the option.
func TestGateOptions(t *testing.T) {
	t.Parallel()
	ok := GateOptions{BaselineBranch: "main", Window: 10, Threshold: "5%", MinHistory: 5, NoiseK: 3, Repeats: 2}
	c, err := ok.Config()
	if err != nil || c.Threshold != 0.05 || c.Repeats != 2 || c.Window != 10 {
		t.Fatalf("%+v: %v", c, err)
	}
	for _, tc := range []struct {
		edit func(*GateOptions)
		opt  string
	}{
		{func(o *GateOptions) { o.Threshold = "5" }, "threshold"},
		{func(o *GateOptions) { o.BaselineBranch = "" }, "baseline-branch"},
		{func(o *GateOptions) { o.BaselineBranch = "a\nb" }, "baseline-branch"},
		{func(o *GateOptions) { o.Window = 0 }, "window"},
		{func(o *GateOptions) { o.MinHistory = 11 }, "min-history"},
		{func(o *GateOptions) { o.Repeats = -1 }, "confirm"},
		{func(o *GateOptions) { o.NoiseK = 0 }, "noise-k"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := o.Config(); err == nil || !strings.HasPrefix(err.Error(), tc.opt) {
			t.Errorf("%+v: %v, want an error about %s", o, err, tc.opt)
		}
	}
}
