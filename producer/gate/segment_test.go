package gate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
	"github.com/benchfleet/benchfleet/protocol"
)

func cut(t *testing.T, history ...float64) (GateConfig, Segmentation) {
	t.Helper()
	c, err := GateConfig{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return c, c.Segment(history)
}

// A step down is a change point: the run after it is judged against the
// new level with the noise of the segments, never across the step; a
// second step is caught; a blip (one run away and straight back) is in
// no segment; a step back up is a change point too.
func TestSegments(t *testing.T) {
	t.Parallel()
	main := gatetest.Around(1000, 0.01, 8)
	c, g := cut(t, append(append([]float64{}, main...), 700, 702)...)
	if len(g.Segments) != 2 || g.Segments[1].Start != 8 || g.Segments[1].Step != StepDown || g.Points != 10 {
		t.Fatalf("segments %+v, want a step down at run 8", g.Segments)
	}
	if s := g.SigmaRel(); s > 0.02 {
		t.Errorf("noise %.3f of the level: the step widened it (want ≈ the 1%% of the history)", s)
	}
	j := c.JudgeOn(true, 701, &g)
	if j.Verdict != VerdictOK || math.Abs(j.Baseline-701) > 1 || j.SegmentStart != 8 || j.Step != StepDown {
		t.Errorf("a run at the new level: %+v, want ok against 701", j)
	}
	if j := c.JudgeOn(true, 630, &g); j.Verdict != VerdictRegression {
		t.Errorf("a second 10%% step: %s (baseline %.1f band %.1f), want a regression", j.Verdict, j.Baseline, j.Band)
	}

	_, g = cut(t, append(append([]float64{}, main...), 650, 1001, 999)...)
	if len(g.Segments) != 1 || len(g.Blips) != 1 || g.Blips[0] != 8 || g.Points != 10 {
		t.Errorf("a blip: segments %+v blips %v, want one segment and the blip at 8", g.Segments, g.Blips)
	}
	_, g = cut(t, append(append([]float64{}, main...), 1300, 1302, 1298)...)
	if len(g.Segments) != 2 || g.Segments[1].Step != StepUp {
		t.Errorf("a step up: %+v", g.Segments)
	}
	// Too little history for a step: the first MinHistory runs are the level.
	_, g = cut(t, 1000, 1000, 700, 700)
	if len(g.Segments) != 1 {
		t.Errorf("four runs: %d segments, want 1 (too few to tell a step)", len(g.Segments))
	}
}

// The window baseline this replaces: after a step two runs later, the
// median of the last 10 and its MAD band hide a second step; the cut
// history does not.
func TestSecondStepIsNotHiddenByTheFirst(t *testing.T) {
	t.Parallel()
	h := append(gatetest.Around(1000, 0.01, 8), 700, 701, 699)
	c, _ := cut(t)
	if j := c.Judge(true, 595, h); j.Verdict != VerdictRegression || math.Abs(j.Baseline-700) > 1.5 {
		t.Fatalf("595 after a step to 700: %s against %.1f (band %.1f), want a regression against 700", j.Verdict, j.Baseline, j.Band)
	}
}

func stepHistory(now time.Time, vals ...float64) []*protocol.Result {
	var out []*protocol.Result
	for i, v := range vals {
		r := gatetest.HistResult(fmt.Sprintf("h%02d", i), "net", "main", now.Add(-time.Duration(len(vals)-i)*time.Hour), v)
		r.Source.Commit = fmt.Sprintf("%040x", i+1)
		out = append(out, r)
	}
	return out
}

// A step down is open until the series is back at the level before it;
// an accepted one is listed as accepted, and the series is judged against
// the level it accepted.
func TestOpenRegressions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c, _ := cut(t)
	open := func(as []Acceptance, vals ...float64) []OpenRegression {
		hist := stepHistory(now, vals...)
		_, o := SeriesOpen(hist, SeriesOf(hist[0]), c, as)
		return o
	}
	base := gatetest.Around(1000, 0.01, 8)
	o := open(nil, append(append([]float64{}, base...), 700, 700, 700)...)
	if len(o) != 1 || o[0].Since != fmt.Sprintf("%040x", 9) || o[0].LastGood != fmt.Sprintf("%040x", 8) || o[0].Runs != 3 || !o[0].IsOpen() || o[0].Bisect == "" {
		t.Fatalf("open regressions %+v, want one since commit 9 (last good 8), 3 runs", o)
	}
	if o := open(nil, append(append([]float64{}, base...), 700, 700, 1000, 1001)...); len(o) != 0 {
		t.Errorf("back at the old level, still open: %+v", o)
	}
	two := open(nil, append(append([]float64{}, base...), 700, 700, 500, 500)...)
	if len(two) != 2 || two[1].Since != fmt.Sprintf("%040x", 11) {
		t.Errorf("a second step: %+v, want two open", two)
	}
	s := SeriesOf(stepHistory(now, 1)[0])
	as := []Acceptance{{Series: s, Commit: fmt.Sprintf("%040x", 9), Reason: "slower, more accurate", By: "alice"}}
	o = open(as, append(append([]float64{}, base...), 700, 700, 700)...)
	if len(o) != 1 || o[0].IsOpen() || o[0].Accepted.Reason != "slower, more accurate" {
		t.Fatalf("accepted: %+v", o)
	}
	// Judged against the accepted level: 630 is 10% below it.
	pts := JudgeSeries(stepHistory(now, append(append([]float64{}, base...), 700, 700, 700, 630)...), c, nil)
	if last := pts[len(pts)-1].Judgement; last.Verdict != VerdictRegression || last.Baseline != 700 {
		t.Errorf("the next step after an accepted one: %+v, want a regression against 700", last)
	}
}

func TestParseSeriesName(t *testing.T) {
	t.Parallel()
	s, err := ParseSeriesName("meta-llama/Llama-3.1-8B/n300-llmbox/bs32/bfloat16")
	if err != nil || s.Model != "meta-llama/Llama-3.1-8B" || s.Pool != "n300-llmbox" || s.BatchSize != 32 || s.DataFormat != "bfloat16" {
		t.Fatalf("%+v %v", s, err)
	}
	if s.Name() != "meta-llama/Llama-3.1-8B/n300-llmbox/bs32/bfloat16" {
		t.Errorf("round trip: %s", s.Name())
	}
	for _, bad := range []string{"", "resnet50", "resnet50/n150/8/bfloat16", "resnet50/n150/bs0/bfloat16", "/n150/bs8/x"} {
		if _, err := ParseSeriesName(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// A step down of one unconfirmed attempt (no repeats: an outlier, a slow
// board mode, or a step nobody confirmed) waits for the next run; one its
// repeats confirmed is the level at once. A step up waits one run unless
// it comes back to the level before a step down (a fix).
func TestTentativeSteps(t *testing.T) {
	t.Parallel()
	c, _ := cut(t)
	main := gatetest.Around(1000, 0.01, 8)
	h := append(append([]float64{}, main...), 700)
	one := c.SegmentRuns(h, nil)
	if j := c.JudgeOn(true, 700, &one); j.Verdict != VerdictRegression || math.Abs(j.Baseline-1000) > 10 {
		t.Errorf("700 after one unconfirmed run at 700: %s against %.1f, want a regression against 1000", j.Verdict, j.Baseline)
	}
	n := make([]int, len(h))
	n[len(n)-1] = 3
	conf := c.SegmentRuns(h, n)
	if j := c.JudgeOn(true, 700, &conf); j.Verdict != VerdictOK {
		t.Errorf("700 after a confirmed run at 700: %s against %.1f, want ok", j.Verdict, j.Baseline)
	}
	if o := c.OpenRegressions(Series{}, stepHistory(time.Now(), h...), &one, nil); len(o) != 0 {
		t.Errorf("an unconfirmed step is listed open: %+v", o)
	}
	// Step up: [main, 1100] judges 1000 against main; a fix is the level at once.
	up := c.Segment(append(append([]float64{}, main...), 1100))
	if j := c.JudgeOn(true, 1000, &up); j.Verdict != VerdictOK {
		t.Errorf("1000 after one run at 1100: %s against %.1f, want ok against main", j.Verdict, j.Baseline)
	}
	fix := c.Segment(append(append([]float64{}, main...), 700, 700, 700, 1000))
	if fix.Level() < 990 {
		t.Errorf("a fix back to 1000: level %.1f, want 1000 at once", fix.Level())
	}
}
