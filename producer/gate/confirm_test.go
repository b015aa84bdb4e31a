package gate

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// A suspect is judged on the median of its attempts, at the noise band of
// a median of that many.
func TestJudgeAttempts(t *testing.T) {
	t.Parallel()
	c, _ := GateConfig{}.WithDefaults()
	hist := gatetest.Around(1000, 0.01, 10) // σ ≈ 0.82% of 1000: band ≈ 24.7 for one attempt
	for _, tc := range []struct {
		attempts []float64
		want     Verdict
	}{
		{[]float64{900}, VerdictRegression},
		{[]float64{900, 1000, 1001}, VerdictOK},        // a rerun does not reproduce it
		{[]float64{900, 905, 1001}, VerdictRegression}, // the median is 905
		{[]float64{900, 0, -1}, VerdictRegression},     // attempts without a figure do not count
		{[]float64{}, VerdictInsufficientHistory},
	} {
		if got := c.JudgeAttempts(hist, tc.attempts).Verdict; got != tc.want {
			t.Errorf("attempts %v: %s, want %s", tc.attempts, got, tc.want)
		}
	}
	// 980 is inside the 5% threshold: no suspect; 940 is beyond the
	// threshold and the band: a regression alone, so a suspect.
	if c.Suspect(980, hist) || !c.Suspect(940, hist) {
		t.Error("Suspect with Repeats 0 is Judge's regression")
	}
	// With repeats a suspect is judged at a narrower band: a drop just
	// beyond the threshold and inside one attempt's band is worth a rerun.
	wide := GateConfig{NoiseK: 10}
	wide, _ = wide.WithDefaults()
	drop := 1000 * (1 - 0.06) // 6%: beyond 5%, inside 10σ (≈ 82)
	if wide.Judge(true, drop, hist).Verdict != VerdictOK {
		t.Fatalf("%v alone should be ok at NoiseK 10", drop)
	}
	wide.Repeats = 2
	if !wide.Suspect(drop, hist) {
		t.Errorf("%v should be a suspect with 2 repeats (band 10·%.2fσ)", drop, medianScale(3))
	}
	if s := medianScale(3); s < 0.72 || s > 0.73 || medianScale(1) != 1 {
		t.Errorf("medianScale(3) = %v, medianScale(1) = %v", s, medianScale(1))
	}
}

// A run's confirmation repeats are one point of the series' history, not
// three: the run's median.
func TestHistoryOnePointPerRun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i := range 5 {
		hist = append(hist, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), 1000))
	}
	// An earlier run that confirmed a regression: three slow attempts.
	for k, v := range []float64{700, 710, 720} {
		r := gatetest.HistResult("hslow", "net", "main", now.Add(-time.Hour), v)
		r.Job = fmt.Sprintf("slow%d", k)
		hist = append(hist, r)
	}
	g, err := NewGate(GateConfig{}, gatetest.HistoryOf(hist))
	if err != nil {
		t.Fatal(err)
	}
	m, rs := gatetest.RunWithRepeats(now, 1000)
	v, err := g.Evaluate(t.Context(), m, RowsFromResults(m, rs))
	if err != nil {
		t.Fatal(err)
	}
	// Six runs, the last a confirmed step: the segment the run is judged
	// against is that step's (the median of its attempts, one point).
	if v[0].Points != 6 || v[0].History != 1 || *v[0].Baseline != 710 {
		t.Errorf("%d runs, %d in the segment, baseline %v; want 6 runs (one point per run), the step's segment of 1 at 710", v[0].Points, v[0].History, *v[0].Baseline)
	}
}

// Rows from watcher states fold repeats into their original's row; a
// repeat whose original is not among the states (its own job page) is a
// row of its own.
func TestRowsFoldRepeats(t *testing.T) {
	t.Parallel()
	m, rs := gatetest.RunWithRepeats(time.Now().UTC(), 900, 1000, 0)
	states := map[string]*runstate.JobState{}
	for _, j := range m.Jobs {
		states[j.ID] = &runstate.JobState{Job: j}
	}
	r1 := m.Jobs[1].ID
	states["j0"].Result, states[r1].Result = rs[0], rs[1]
	rows := runstate.Rows(m, states)
	if len(rows) != 1 || len(rows[0].Repeats) != 2 || rows[0].Repeats[0].Status != protocol.StatusPassed || rows[0].Repeats[1].Status != "" {
		t.Fatalf("rows %+v", rows)
	}
	if rows := runstate.Rows(m, map[string]*runstate.JobState{r1: states[r1]}); len(rows) != 1 || rows[0].Job != r1 {
		t.Errorf("a repeat alone: rows %+v", rows)
	}
}

// A repeat is the same cell and series with its own id, at high priority,
// avoiding the suspect's board; its limits come from the original's cell.
func TestRepeatJob(t *testing.T) {
	t.Parallel()
	orig := &protocol.Job{Schema: protocol.SchemaJob, Run: "pr-7", CreatedAt: time.Now().UTC(), Pool: "sim", Priority: protocol.PriorityNormal,
		Runner: "sim", Benchmark: protocol.Benchmark{Model: "net", BatchSize: 4, LoopCount: 10}, Labels: map[string]string{"sim.duration": "1ms"},
		Limits: protocol.Limits{Timeout: protocol.Duration(7 * time.Minute), PCCMin: 0.95}}
	orig.Normalize()
	cell, id := orig.CellID()
	orig.ID = id
	m := &protocol.RunManifest{Run: orig.Run, CreatedAt: orig.CreatedAt}
	mj := protocol.ManifestJob{ID: id, Pool: "sim", Runner: "sim", Model: "net", Cell: cell}
	r := &protocol.Result{Job: id, Run: orig.Run, Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Benchmark: orig.Benchmark,
		Labels: orig.Labels, Worker: protocol.WorkerRef{ID: "w1"}, Device: protocol.DeviceRef{ID: "sim-0"}, PCC: protocol.PCC{Min: 0.99}}
	j1, err := RepeatJob(m, mj, r, 1)
	if err != nil {
		t.Fatal(err)
	}
	j1b, _ := RepeatJob(m, mj, r, 1)
	j2, _ := RepeatJob(m, mj, r, 2)
	if j1.ID == id || j1.ID == j2.ID || j1.ID != j1b.ID {
		t.Errorf("ids: original %s, repeat 1 %s (again %s), repeat 2 %s: want distinct and deterministic", id, j1.ID, j1b.ID, j2.ID)
	}
	if j1.Repeat != 1 || j1.Priority != protocol.PriorityHigh || len(j1.Avoid) != 1 || j1.Avoid[0] != "w1/sim-0" {
		t.Errorf("repeat %+v", j1)
	}
	if j1.Limits.Timeout.D() != 7*time.Minute || j1.Limits.PCCMin != 0.95 {
		t.Errorf("limits %+v, want the original's", j1.Limits)
	}
	want := orig
	want.Repeat, want.Priority, want.Avoid = 1, protocol.PriorityHigh, j1.Avoid
	if got, wantCell := j1.Cell(), want.Cell(); got != wantCell {
		t.Errorf("cell %q, want %q", got, wantCell)
	}
	if SeriesOf(&protocol.Result{Pool: j1.Pool, Runner: j1.Runner, Benchmark: j1.Benchmark}) != SeriesOf(r) {
		t.Error("a repeat's series differs from its original's")
	}
}

// A "repeat" in the manifest that is not what RepeatJob makes of its
// original (its id is not the original's cell with its repeat number) is
// no attempt: a fast result listed as one does not clear a regression.
func TestForgedRepeatIsNoAttempt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range gatetest.Around(1000, 0.01, 10) {
		hist = append(hist, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := gatetest.RunWithRepeats(now, 900, 1000, 1001)
	for i := range m.Jobs[1:] {
		forged := fmt.Sprintf("jfast%d", i)
		m.Jobs[1+i].ID, rs[1+i].Job = forged, forged
	}
	rows := RowsFromResults(m, rs)
	if len(rows) != 1 || len(rows[0].Repeats) != 0 {
		t.Fatalf("%d rows, %d attempts; want 1 row, no attempts", len(rows), len(rows[0].Repeats))
	}
	v, err := JudgeRun(t.Context(), RunInput{Manifest: m, Results: rs, Gate: true, History: gatetest.HistoryOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	if g := v.Report.Verdicts[0]; g.Verdict != VerdictRegression || g.Confirmation != nil {
		t.Errorf("verdict %s, confirmation %+v; want an unconfirmed regression", g.Verdict, g.Confirmation)
	}
	// Requeue's manifest keeps only what counts for the run's own jobs.
	if got := MergeRepeats(&protocol.RunManifest{Run: m.Run, Jobs: m.Jobs[:1]}, m); len(got.Jobs) != 1 {
		t.Errorf("merged manifest adopts %d forged repeats", len(got.Jobs)-1)
	}
}
