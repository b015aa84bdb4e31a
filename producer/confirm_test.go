package producer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// A suspect is judged on the median of its attempts, at the noise band of
// a median of that many.
func TestJudgeAttempts(t *testing.T) {
	t.Parallel()
	c, _ := GateConfig{}.WithDefaults()
	hist := around(1000, 0.01, 10) // σ ≈ 0.82% of 1000: band ≈ 24.7 for one attempt
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

// runWithRepeats is a run of one job whose result is value, with the given
// repeats' results (0: no result yet), in the manifest as its attempts.
func runWithRepeats(created time.Time, value float64, repeats ...float64) (*protocol.RunManifest, []*protocol.Result) {
	const cell = "pool=sim runner=sim test= model=net batch=4 loop=10 warmup=0 format=bfloat16 training=false input=0 timeout=0s pcc_min=0 source=\"\""
	m := &protocol.RunManifest{Schema: protocol.SchemaManifest, Run: "pr-7", CreatedAt: created,
		Jobs: []protocol.ManifestJob{{ID: "j0", Pool: "sim", Runner: "sim", Model: "net", BatchSize: 4, DataFormat: "bfloat16", Cell: cell}}}
	res := func(id string, v float64, dev string) *protocol.Result {
		r := histResult("pr-7", "net", "feature", created, v)
		r.Job, r.Worker.ID, r.Device.ID = id, "w1", dev
		return r
	}
	rs := []*protocol.Result{res("j0", value, "d0")}
	for k, v := range repeats {
		id := repeatID("pr-7", cell, k+1)
		m.Jobs = append(m.Jobs, protocol.ManifestJob{ID: id, Pool: "sim", Runner: "sim", Model: "net", BatchSize: 4,
			DataFormat: "bfloat16", Repeat: k + 1, Of: "j0"})
		if v > 0 {
			rs = append(rs, res(id, v, fmt.Sprintf("d%d", k+1)))
		}
	}
	return m, rs
}

func historyOf(hist []*protocol.Result) HistoryFunc {
	return func(_ context.Context, f index.Filter) ([]*protocol.Result, error) {
		var out []*protocol.Result
		for _, r := range hist {
			if f.Match(r) {
				out = append(out, r)
			}
		}
		return out, nil
	}
}

// The gate folds a job's repeats into its row: one row, its attempts, the
// verdict of their median; a regression they do not reproduce passes and
// says so in every report.
func TestEvaluateConfirmation(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range around(1000, 0.01, 10) {
		hist = append(hist, histResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	for _, tc := range []struct {
		name    string
		repeats []float64
		verdict Verdict
		outcome Outcome
		median  float64
	}{
		{"not reproduced", []float64{1000, 1002}, VerdictNotReproduced, OutcomePass, 1000},
		{"reproduced", []float64{905, 898}, VerdictRegression, OutcomeRegression, 900},
		{"a repeat still running", []float64{1000, 0}, VerdictRegression, OutcomeRegression, 950},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, rs := runWithRepeats(now, 900, tc.repeats...)
			rows := RowsFromResults(m, rs)
			if len(rows) != 1 || len(rows[0].Repeats) != 2 {
				t.Fatalf("%d rows (want 1) with %d repeats (want 2)", len(rows), len(rows[0].Repeats))
			}
			v, err := Judge(t.Context(), JudgeRequest{Manifest: m, Rows: rows, Gate: true, History: historyOf(hist)})
			if err != nil {
				t.Fatal(err)
			}
			g := v.Report.Verdicts[0]
			if g.Verdict != tc.verdict || v.Report.Outcome() != tc.outcome || g.Confirmation == nil || g.Confirmation.Median != tc.median {
				t.Fatalf("verdict %s outcome %s confirmation %+v; want %s %s median %v", g.Verdict, v.Report.Outcome(), g.Confirmation,
					tc.verdict, tc.outcome, tc.median)
			}
			if a := g.Confirmation.Attempts; len(a) != 3 || a[0].Board != "w1/d0" || a[0].SamplesPerSec != 900 || a[1].Repeat != 1 {
				t.Errorf("attempts %+v", a)
			}
			var junit, md, table bytes.Buffer
			if err := WriteJUnit(&junit, v.Report); err != nil {
				t.Fatal(err)
			}
			if err := WriteMarkdown(&md, v.Report); err != nil {
				t.Fatal(err)
			}
			if err := WriteGateTable(&table, v.Report); err != nil {
				t.Fatal(err)
			}
			for name, out := range map[string]string{"junit": junit.String(), "markdown": md.String(), "table": table.String()} {
				if !strings.Contains(out, "attempts 900.0 (w1/d0)") {
					t.Errorf("%s lacks the attempts:\n%s", name, out)
				}
			}
			if !strings.Contains(junit.String(), `name="confirmation.attempts" value="3"`) || strings.Contains(junit.String(), `name="attempts"`) {
				t.Errorf("junit: the confirmation's attempts not named apart from the delivery's attempt:\n%s", junit.String())
			}
			if tc.verdict == VerdictNotReproduced && (!strings.Contains(table.String(), "1 not reproduced") || strings.Contains(junit.String(), "<failure")) {
				t.Errorf("not reproduced: table or junit wrong:\n%s\n%s", table.String(), junit.String())
			}
			if tc.name == "a repeat still running" && v.Report.Unfinished() != 1 {
				t.Errorf("the repeat without a result is unfinished: %d", v.Report.Unfinished())
			}
		})
	}
}

// A run's confirmation repeats are one point of the series' history, not
// three: the run's median.
func TestHistoryOnePointPerRun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i := range 5 {
		hist = append(hist, histResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), 1000))
	}
	// An earlier run that confirmed a regression: three slow attempts.
	for k, v := range []float64{700, 710, 720} {
		r := histResult("hslow", "net", "main", now.Add(-time.Hour), v)
		r.Job = fmt.Sprintf("slow%d", k)
		hist = append(hist, r)
	}
	g, err := NewGate(GateConfig{}, historyOf(hist))
	if err != nil {
		t.Fatal(err)
	}
	m, rs := runWithRepeats(now, 1000)
	v, err := g.Evaluate(t.Context(), m, RowsFromResults(m, rs))
	if err != nil {
		t.Fatal(err)
	}
	if v[0].History != 6 || *v[0].Baseline != 1000 {
		t.Errorf("history %d baseline %v; want 6 points (one per run), baseline 1000", v[0].History, *v[0].Baseline)
	}
}

// Rows from watcher states fold repeats into their original's row; a
// repeat whose original is not among the states (its own job page) is a
// row of its own.
func TestRowsFoldRepeats(t *testing.T) {
	t.Parallel()
	m, rs := runWithRepeats(time.Now().UTC(), 900, 1000, 0)
	states := map[string]*JobState{}
	for _, j := range m.Jobs {
		states[j.ID] = &JobState{Job: j}
	}
	r1 := m.Jobs[1].ID
	states["j0"].Result, states[r1].Result = rs[0], rs[1]
	rows := Rows(m, states)
	if len(rows) != 1 || len(rows[0].Repeats) != 2 || rows[0].Repeats[0].Status != protocol.StatusPassed || rows[0].Repeats[1].Status != "" {
		t.Fatalf("rows %+v", rows)
	}
	if rows := Rows(m, map[string]*JobState{r1: states[r1]}); len(rows) != 1 || rows[0].Job != r1 {
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

// A confirmation that cannot be done (here: the history not read) is not
// the run's failure: Confirm says why through OnFailed and returns the
// states it was given, which the gate then judges unconfirmed.
func TestConfirmFailureKeepsStates(t *testing.T) {
	t.Parallel()
	m, rs := runWithRepeats(time.Now(), 900)
	states := map[string]*JobState{"j0": {Job: m.Jobs[0], Kind: protocol.EventPassed, Result: rs[0]}}
	var said error
	c := &Confirmer{Repeats: 2, OnFailed: func(err error) { said = err }}
	bad := errors.New("history down")
	req := JudgeRequest{History: func(context.Context, index.Filter) ([]*protocol.Result, error) { return nil, bad }}
	got, n, err := c.Confirm(t.Context(), &Watcher{Manifest: m}, states, req, nil)
	if err != nil || n != 0 || got["j0"] != states["j0"] || !errors.Is(said, bad) {
		t.Fatalf("confirm with no history: %v, %d queued, said %v", err, n, said)
	}
}

// While a repeat has not ended the row is the original's (its value beside
// its change) and every rendering says the confirmation is pending, not
// "not reproduced".
func TestConfirmationPending(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range around(1000, 0.01, 10) {
		hist = append(hist, histResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := runWithRepeats(now, 900, 1000, 0)
	v, err := Judge(t.Context(), JudgeRequest{Manifest: m, Rows: RowsFromResults(m, rs), Gate: true, History: historyOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	g := v.Report.Verdicts[0]
	if g.Confirmation == nil || !g.Confirmation.Pending || g.Value != 900 {
		t.Fatalf("pending confirmation: value %v, %+v", g.Value, g.Confirmation)
	}
	var junit, md, table bytes.Buffer
	for _, err := range []error{WriteJUnit(&junit, v.Report), WriteMarkdown(&md, v.Report), WriteGateTable(&table, v.Report)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, out := range map[string]string{"junit": junit.String(), "markdown": md.String(), "table": table.String()} {
		if !strings.Contains(out, "pending") || strings.Contains(out, "not reproduced") || strings.Contains(out, `"confirmation.reproduced" value="false"`) {
			t.Errorf("%s does not say pending:\n%s", name, out)
		}
	}
}

// A "repeat" in the manifest that is not what RepeatJob makes of its
// original (its id is not the original's cell with its repeat number) is
// no attempt: a fast result listed as one does not clear a regression.
func TestForgedRepeatIsNoAttempt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range around(1000, 0.01, 10) {
		hist = append(hist, histResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := runWithRepeats(now, 900, 1000, 1001)
	for i := range m.Jobs[1:] {
		forged := fmt.Sprintf("jfast%d", i)
		m.Jobs[1+i].ID, rs[1+i].Job = forged, forged
	}
	rows := RowsFromResults(m, rs)
	if len(rows) != 1 || len(rows[0].Repeats) != 0 {
		t.Fatalf("%d rows, %d attempts; want 1 row, no attempts", len(rows), len(rows[0].Repeats))
	}
	v, err := Judge(t.Context(), JudgeRequest{Manifest: m, Rows: rows, Gate: true, History: historyOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	if g := v.Report.Verdicts[0]; g.Verdict != VerdictRegression || g.Confirmation != nil {
		t.Errorf("verdict %s, confirmation %+v; want an unconfirmed regression", g.Verdict, g.Confirmation)
	}
	// Requeue's manifest keeps only what counts for the run's own jobs.
	if got := mergeRepeats(&protocol.RunManifest{Run: m.Run, Jobs: m.Jobs[:1]}, m); len(got.Jobs) != 1 {
		t.Errorf("merged manifest adopts %d forged repeats", len(got.Jobs)-1)
	}
}

// A run's confirmation repeats are attempts, not jobs: runs list and show
// and the dashboard count the run's jobs without them.
func TestRunCountsWithoutRepeats(t *testing.T) {
	t.Parallel()
	m, rs := runWithRepeats(time.Now().UTC(), 900, 1000, 1001)
	states := map[string]*JobState{}
	for i, j := range m.Jobs {
		states[j.ID] = &JobState{Job: j, Kind: protocol.EventPassed, Result: rs[i]}
	}
	if n, p := RunJobs(m), RunProgress(m, states); n != 1 || p.All.Total != 1 || p.All.Done() != 1 {
		t.Errorf("%d jobs, progress %d/%d; want 1 job, 1/1", n, p.All.Done(), p.All.Total)
	}
	var b bytes.Buffer
	if err := WriteRuns(&b, []RunSummary{{Manifest: m, State: RunPassed}}); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(strings.Split(b.String(), "\n")[1]); len(f) < 3 || f[2] != "1" {
		t.Errorf("runs list JOBS: %q", b.String())
	}
}

// The table's SAMPLES/S beside CHANGE is what the change is of: the
// attempts' median, marked, once the gate judged the row on them.
func TestTableShowsTheMedian(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range around(1000, 0.01, 10) {
		hist = append(hist, histResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := runWithRepeats(now, 800, 1000, 1002)
	rows := RowsFromResults(m, rs)
	v, err := Judge(t.Context(), JudgeRequest{Manifest: m, Rows: rows, Gate: true, History: historyOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, v.Report.Rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1000.0 (median)") || strings.Contains(b.String(), "800.0 ") {
		t.Errorf("table:\n%s", b.String())
	}
}

// Wherever a change is shown beside a value, the value is the one the
// change is of: a row judged on its attempts shows their median, marked
// "(median)" in text (the summary table, Markdown), samples_per_sec in
// JUnit.
func TestJudgedValueBesideItsChange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range around(1000, 0.01, 10) {
		hist = append(hist, histResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := runWithRepeats(now, 900, 1000, 1002)
	v, err := Judge(t.Context(), JudgeRequest{Manifest: m, Rows: RowsFromResults(m, rs), Gate: true, History: historyOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	row := v.Report.Rows[0]
	if row.JudgedValue() != 1000 || row.JudgedRate() != "1000.0 (median)" {
		t.Fatalf("judged value %v (%q), want the median 1000.0", row.JudgedValue(), row.JudgedRate())
	}
	var junit, md, table bytes.Buffer
	if err := WriteJUnit(&junit, v.Report); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, v.Report); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(&table, v.Report.Rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), `name="samples_per_sec" value="1000.000"`) {
		t.Errorf("junit: samples_per_sec is not the median its change is of:\n%s", junit.String())
	}
	if !strings.Contains(md.String(), "| 1000.0 (median) |") || strings.Contains(md.String(), "| 900.0 |") {
		t.Errorf("markdown: the table's samples/sec is not the median its change is of:\n%s", md.String())
	}
	if !strings.Contains(table.String(), "1000.0 (median)") {
		t.Errorf("table:\n%s", table.String())
	}
}
