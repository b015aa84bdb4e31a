package bench

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/gate"
)

// After a first step that stays, the gate passes a candidate at the new
// level and catches a second 10% step (the goal: false positives
// at most 1%, detection at least 95%), where the window baseline, on the
// same series, does not. The line scripts read comes before the summary.
func TestRunGateAfterAStep(t *testing.T) {
	t.Parallel()
	cfg := DefaultGateConfig()
	cfg.Series = 4000
	rep, err := RunGate(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AtNewLevel+rep.SecondSteps != cfg.Series || rep.AtNewLevel < cfg.Series*2/5 || rep.SecondSteps < cfg.Series*2/5 {
		t.Fatalf("%d candidates at the new level + %d second steps, want %d about half each", rep.AtNewLevel, rep.SecondSteps, cfg.Series)
	}
	if avg := frac(rep.RunsAfter, cfg.Series); avg < 4 || avg > 5 {
		t.Errorf("%.2f history runs after the step on average, want about %.1f (1 to %d drawn)", avg, (1+GateAfterMax)/2.0, GateAfterMax)
	}
	f, d := rep.StepRates(rep.Step)
	if f > 0.01 || d < 0.95 {
		t.Errorf("after a step: false positives %.2f%%, detection %.2f%%; goal ≤ 1%% and ≥ 95%%", 100*f, 100*d)
	}
	f0, d0 := rep.StepRates(rep.WindowStep)
	if f0 <= 0.01 && d0 >= 0.95 || f0 <= f && d0 >= d {
		t.Errorf("window baseline after a step: false positives %.1f%%, detection %.1f%%: not worse than the gate's %.1f%%, %.1f%%", 100*f0, 100*d0, 100*f, 100*d)
	}
	if rep.Step.FalsePositives+rep.Step.Detected > rep.Step.Suspects {
		t.Errorf("%d confirmed of %d suspects", rep.Step.FalsePositives+rep.Step.Detected, rep.Step.Suspects)
	}
	var out bytes.Buffer
	rep.Print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	line := regexp.MustCompile(`^after a step: false positives (\d+\.\d)% detection of a second step (\d+\.\d)% \(window baseline: false positives (\d+\.\d)% detection (\d+\.\d)%\)$`)
	m := line.FindStringSubmatch(lines[len(lines)-2])
	if m == nil || lines[len(lines)-2] != rep.StepSummary() || lines[len(lines)-1] != rep.Summary() {
		t.Fatalf("last lines %q: want the after-a-step line, then the summary", lines[len(lines)-2:])
	}
	for k, v := range []float64{f, d, f0, d0} {
		if want := fmt.Sprintf("%.1f", 100*v); m[k+1] != want {
			t.Errorf("figure %d of %q: %s, want %s", k+1, lines[len(lines)-2], m[k+1], want)
		}
	}
}

// The window baseline is the gate's rule before change points: a window
// straddling a step widens its band (σ from the MAD of both levels) and
// moves its median half-way, so a second drop hides in it. The gate,
// judging against the segment the run continues, catches it.
func TestWindowBaselineHidesASecondStep(t *testing.T) {
	t.Parallel()
	c, err := gate.GateConfig{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	steady := []float64{1000, 1004, 996, 1002, 998, 1001, 999, 1003, 997, 1000}
	if !windowRegression(c, steady, 900, 1) || windowRegression(c, steady, 980, 1) {
		t.Errorf("window baseline on a steady history: 900 must be a regression, 980 not")
	}
	// Five runs at 1000, five at 700 (a first step), then 600: 14% below
	// the new level.
	hist := append(append([]float64(nil), steady[:5]...), 700, 702, 698, 701, 699)
	if windowRegression(c, hist, 600, 1) {
		t.Errorf("window baseline: 600 after %v is a regression; its band should hide it", hist)
	}
	if j := c.Judge(true, 600, hist); j.Verdict != gate.VerdictRegression {
		t.Errorf("gate: 600 after %v is %s (baseline %.0f, band %.1f), want a regression", hist, j.Verdict, j.Baseline, j.Band)
	}
	if windowRegression(c, hist[:4], 500, 1) {
		t.Errorf("window baseline with 4 results (MinHistory %d): a verdict", c.MinHistory)
	}
}
