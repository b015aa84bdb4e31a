package gate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// trustHistory is five trusted results at 1000 samples/s on main, then
// ten of the untrusted producer at 2000 claiming main: by its stream
// (Trust) for the first five, by its run name alone (results written
// before BENCH_UNTRUSTED) for the rest.
func trustHistory(t0 time.Time) []*protocol.Result {
	var hist []*protocol.Result
	add := func(run string, trust protocol.Trust, v float64, i int) {
		hist = append(hist, &protocol.Result{Schema: protocol.SchemaResult, Job: fmt.Sprintf("j%02d", i), Run: run,
			RunCreatedAt: t0.Add(time.Duration(i) * time.Minute), Pool: "sim", Runner: "sim", Status: protocol.StatusPassed,
			Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 4, DataFormat: "bfloat16"},
			Source:    protocol.Source{Branch: "main"}, Measurements: protocol.Measurements{SamplesPerSec: v}, Trust: trust})
	}
	for i := range 5 {
		add(fmt.Sprintf("base-%d", i), "", 1000, i)
	}
	for i := range 10 {
		trust := protocol.TrustUntrusted
		run := fmt.Sprintf("forged-%d", i)
		if i >= 5 {
			trust, run = "", fmt.Sprintf("%sforged-%d", protocol.UntrustedRunPrefix, i)
		}
		add(run, trust, 2000, 5+i)
	}
	return hist
}

// Results of the untrusted producer never enter a baseline, whatever
// branch they name; a run of theirs is judged against the trusted one and
// marked untrusted.
func TestGateExcludesUntrustedResults(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hist := trustHistory(t0)
	history := func(_ context.Context, f index.Filter) ([]*protocol.Result, error) { return hist, nil }
	g, err := NewGate(GateConfig{}, history)
	if err != nil {
		t.Fatal(err)
	}
	judge := func(run string, trust protocol.Trust, v float64) GateRow {
		t.Helper()
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: "jnew", Run: run, RunCreatedAt: t0.Add(time.Hour), Pool: "sim", Runner: "sim",
			Status: protocol.StatusPassed, Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 4, DataFormat: "bfloat16"},
			Source: protocol.Source{Branch: "main"}, Measurements: protocol.Measurements{SamplesPerSec: v}, Trust: trust}
		m := ManifestFromResults(run, []*protocol.Result{r})
		v2, err := g.Evaluate(t.Context(), m, RowsFromResults(m, []*protocol.Result{r}))
		if err != nil || len(v2) != 1 {
			t.Fatalf("evaluate: %v %v", v2, err)
		}
		return v2[0]
	}
	if v := judge("after-1", "", 1000); v.Verdict != VerdictOK || v.Baseline == nil || *v.Baseline != 1000 || v.History != 5 || v.Trust != "" {
		t.Errorf("the trusted run: %+v, want ok against the 5 trusted results (baseline 1000)", v)
	}
	if v := judge("forged-x", protocol.TrustUntrusted, 2000); v.Verdict != VerdictImproved || *v.Baseline != 1000 || v.Trust != protocol.TrustUntrusted {
		t.Errorf("an untrusted run: %+v, want improved against the trusted baseline, marked untrusted", v)
	}
	// The dashboard's series: untrusted runs are judged, never OnBaseline,
	// and the last trusted point is judged against 1000.
	cfg, _ := GateConfig{}.WithDefaults()
	pts := SeriesPoints(hist, SeriesOf(hist[0]), cfg)
	for _, p := range pts {
		if p.Result.Untrusted() && p.OnBaseline {
			t.Errorf("run %s of the untrusted producer is on the baseline", p.Result.Run)
		}
	}
	last := pts[len(pts)-1]
	if !last.Judgement.HasBaseline || last.Judgement.Baseline != 1000 {
		t.Errorf("the last untrusted point's baseline %v, want the trusted 1000", last.Judgement.Baseline)
	}
}
