package gate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
	"github.com/benchfleet/benchfleet/protocol"
)

// A series page counts a run once: a run's confirmation repeats fold into
// one point judged on the median of its attempts, and no attempt of a run
// is in its own baseline.
func TestSeriesPointsOnePerRun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var rs []*protocol.Result
	for i := range 5 {
		rs = append(rs, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), 100+0.01*float64(i)))
	}
	attempts := func(run string, created time.Time, vs ...float64) {
		for k, v := range vs {
			r := gatetest.HistResult(run, "net", "main", created, v)
			r.Job = fmt.Sprintf("%s-a%d", run, k)
			rs = append(rs, r)
		}
	}
	attempts("cleared", now.Add(-4*time.Hour), 80, 100, 100.01)    // one slow attempt: not reproduced
	attempts("confirmed", now.Add(-3*time.Hour), 80, 80.02, 79.99) // slow three times
	gate, _ := GateConfig{}.WithDefaults()
	pts := SeriesPoints(rs, SeriesOf(rs[0]), gate)
	if len(pts) != 7 {
		t.Fatalf("%d points, want 7 (one per run)", len(pts))
	}
	cleared, confirmed := pts[5], pts[6]
	if cleared.Attempts() != 3 || cleared.Value() != 100 || cleared.Judgement.Verdict != VerdictOK || cleared.Judgement.N != 5 {
		t.Errorf("cleared run: %d attempts, value %v, %s against %d points; want 3, the median 100, ok against 5",
			cleared.Attempts(), cleared.Value(), cleared.Judgement.Verdict, cleared.Judgement.N)
	}
	if confirmed.Value() != 80 || confirmed.Judgement.Verdict != VerdictRegression || confirmed.Judgement.N != 6 || math.Abs(confirmed.Judgement.Baseline-100.015) > 1e-9 {
		t.Errorf("confirmed run: value %v, %s against %d points, baseline %v; want 80, regression against 6 (the cleared run once, at its median), baseline 100.015",
			confirmed.Value(), confirmed.Judgement.Verdict, confirmed.Judgement.N, confirmed.Judgement.Baseline)
	}
	regressions := 0
	for _, p := range pts {
		if p.Judgement.Verdict == VerdictRegression {
			regressions++
		}
	}
	if regressions != 1 {
		t.Errorf("%d regressions, want 1 (the gate's)", regressions)
	}
}
