package gate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// The gate folds a job's repeats into its row: one row, its attempts, the
// verdict of their median; a regression they do not reproduce passes and
// says so in every report.
func TestEvaluateConfirmation(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range gatetest.Around(1000, 0.01, 10) {
		hist = append(hist, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	for _, tc := range []struct {
		name    string
		repeats []float64
		verdict gate.Verdict
		outcome gate.Outcome
		median  float64
	}{
		{"not reproduced", []float64{1000, 1002}, gate.VerdictNotReproduced, gate.OutcomePass, 1000},
		{"reproduced", []float64{905, 898}, gate.VerdictRegression, gate.OutcomeRegression, 900},
		{"a repeat still running", []float64{1000, 0}, gate.VerdictRegression, gate.OutcomeRegression, 950},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, rs := gatetest.RunWithRepeats(now, 900, tc.repeats...)
			rows := gate.RowsFromResults(m, rs)
			if len(rows) != 1 || len(rows[0].Repeats) != 2 {
				t.Fatalf("%d rows (want 1) with %d repeats (want 2)", len(rows), len(rows[0].Repeats))
			}
			v, err := gate.JudgeRun(t.Context(), gate.RunInput{Manifest: m, Results: rs, Gate: true, History: gatetest.HistoryOf(hist)})
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
			if err := report.WriteJUnit(&junit, v.Report); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteMarkdown(&md, v.Report); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteGateTable(&table, v.Report); err != nil {
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
			if tc.verdict == gate.VerdictNotReproduced && (!strings.Contains(table.String(), "1 not reproduced") || strings.Contains(junit.String(), "<failure")) {
				t.Errorf("not reproduced: table or junit wrong:\n%s\n%s", table.String(), junit.String())
			}
			if tc.name == "a repeat still running" && v.Report.Unfinished() != 1 {
				t.Errorf("the repeat without a result is unfinished: %d", v.Report.Unfinished())
			}
		})
	}
}

// While a repeat has not ended the row is the original's (its value beside
// its change) and every rendering says the confirmation is pending, not
// "not reproduced".
func TestConfirmationPending(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hist []*protocol.Result
	for i, v := range gatetest.Around(1000, 0.01, 10) {
		hist = append(hist, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := gatetest.RunWithRepeats(now, 900, 1000, 0)
	v, err := gate.JudgeRun(t.Context(), gate.RunInput{Manifest: m, Results: rs, Gate: true, History: gatetest.HistoryOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	g := v.Report.Verdicts[0]
	if g.Confirmation == nil || !g.Confirmation.Pending || g.Value != 900 {
		t.Fatalf("pending confirmation: value %v, %+v", g.Value, g.Confirmation)
	}
	var junit, md, table bytes.Buffer
	for _, err := range []error{report.WriteJUnit(&junit, v.Report), report.WriteMarkdown(&md, v.Report), report.WriteGateTable(&table, v.Report)} {
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

// A run's confirmation repeats are attempts, not jobs: runs list and show
// and the dashboard count the run's jobs without them.
func TestRunCountsWithoutRepeats(t *testing.T) {
	t.Parallel()
	m, rs := gatetest.RunWithRepeats(time.Now().UTC(), 900, 1000, 1001)
	states := map[string]*runstate.JobState{}
	for i, j := range m.Jobs {
		states[j.ID] = &runstate.JobState{Job: j, Kind: protocol.EventPassed, Result: rs[i]}
	}
	if n, p := runstate.RunJobs(m), runstate.ProgressOf(m, states); n != 1 || p.All.Total != 1 || p.All.Done() != 1 {
		t.Errorf("%d jobs, progress %d/%d; want 1 job, 1/1", n, p.All.Done(), p.All.Total)
	}
	var b bytes.Buffer
	if err := report.WriteRuns(&b, []watch.RunSummary{{Manifest: m, State: runstate.RunPassed}}); err != nil {
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
	for i, v := range gatetest.Around(1000, 0.01, 10) {
		hist = append(hist, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := gatetest.RunWithRepeats(now, 800, 1000, 1002)
	v, err := gate.JudgeRun(t.Context(), gate.RunInput{Manifest: m, Results: rs, Gate: true, History: gatetest.HistoryOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteTable(&b, v.Report.Rows); err != nil {
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
	for i, v := range gatetest.Around(1000, 0.01, 10) {
		hist = append(hist, gatetest.HistResult(fmt.Sprintf("h%d", i), "net", "main", now.Add(-time.Duration(10-i)*time.Hour), v))
	}
	m, rs := gatetest.RunWithRepeats(now, 900, 1000, 1002)
	v, err := gate.JudgeRun(t.Context(), gate.RunInput{Manifest: m, Results: rs, Gate: true, History: gatetest.HistoryOf(hist)})
	if err != nil {
		t.Fatal(err)
	}
	row := v.Report.Rows[0]
	if row.JudgedValue() != 1000 || row.JudgedRate() != "1000.0 (median)" {
		t.Fatalf("judged value %v (%q), want the median 1000.0", row.JudgedValue(), row.JudgedRate())
	}
	var junit, md, table bytes.Buffer
	if err := report.WriteJUnit(&junit, v.Report); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteMarkdown(&md, v.Report); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteTable(&table, v.Report.Rows); err != nil {
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

// The gate from stored results alone (no manifest): a failed job takes
// precedence over a regression in the same run; history is the baseline
// branch's passed results; a branch without history judges nothing; a run
// the store does not know is gate.ErrNoRun.
func TestJudgeRunFromTheStore(t *testing.T) {
	t.Parallel()
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Now().UTC()
	put := func(r *protocol.Result) {
		t.Helper()
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range gatetest.Around(1000, 0.01, 10) {
		created := now.Add(-time.Duration(10-i) * time.Hour)
		for _, model := range []string{"net-a", "net-b"} {
			put(gatetest.HistResult(fmt.Sprintf("h%d", i), model, "main", created, v))
			put(gatetest.HistResult(fmt.Sprintf("f%d", i), model, "feature-y", created, 5000)) // another branch
		}
		bad := gatetest.HistResult(fmt.Sprintf("b%d", i), "net-a", "main", created, 10)
		bad.Status = protocol.StatusFailed
		put(bad) // failed results are no history
	}
	a := gatetest.HistResult("pr-1", "net-a", "feature-x", now, 800)
	b := gatetest.HistResult("pr-1", "net-b", "feature-x", now, 1000)
	b.Status, b.Error, b.PCC = protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "pcc 0.31 below 0.99"}, protocol.PCC{Value: 0.31, Min: 0.99}
	put(a)
	put(b)

	v, err := gate.JudgeRun(t.Context(), gate.RunInput{Run: "pr-1", Store: store, Gate: true})
	if err != nil {
		t.Fatal(err)
	}
	c := gate.CountVerdicts(v.Report.Verdicts)
	if v.Outcome != gate.OutcomeFail || v.Report.Outcome() != gate.OutcomeFail || c.Regressions != 1 || c.Failed != 1 {
		t.Fatalf("outcome %s/%s counts %+v; want FAIL, 1 regression and 1 failed", v.Outcome, v.Report.Outcome(), c)
	}
	for _, g := range v.Report.Verdicts {
		if g.Model == "net-a" && (g.History != 10 || *g.Baseline != 1000) {
			t.Errorf("net-a: %d results, baseline %v; want the 10 passed on main at 1000", g.History, *g.Baseline)
		}
	}
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, v.Report); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	if !strings.Contains(s, "`pr-1`: FAIL") || !strings.Contains(s, "pcc 0.31 below 0.99") || strings.Index(s, "| net-a |") > strings.Index(s, "| net-b |") {
		t.Errorf("markdown: want FAIL, the PCC reason, the regression row first:\n%s", s)
	}

	v, err = gate.JudgeRun(t.Context(), gate.RunInput{Run: "pr-1", Store: store, Gate: true, GateConfig: gate.GateConfig{BaselineBranch: "release-9"}})
	if err != nil || gate.CountVerdicts(v.Report.Verdicts).InsufficientHistory != 1 || gate.CountVerdicts(v.Report.Verdicts).Regressions != 0 {
		t.Errorf("baseline release-9: %v %+v; want no history, no regression", err, gate.CountVerdicts(v.Report.Verdicts))
	}
	if _, err := gate.JudgeRun(t.Context(), gate.RunInput{Run: "nothing-here", Store: store}); !errors.Is(err, gate.ErrNoRun) {
		t.Errorf("unknown run: %v, want gate.ErrNoRun", err)
	}
}

// A confirmation that cannot be done (here: the history not read) is not
// the run's failure: Confirm says why through OnFailed and returns the
// states it was given, which the gate then judges unconfirmed.
func TestConfirmFailureKeepsStates(t *testing.T) {
	t.Parallel()
	m, rs := gatetest.RunWithRepeats(time.Now(), 900)
	states := map[string]*runstate.JobState{"j0": {Job: m.Jobs[0], Kind: protocol.EventPassed, Result: rs[0]}}
	var said error
	c := &submit.Confirmer{Repeats: 2, OnFailed: func(err error) { said = err }}
	bad := errors.New("history down")
	req := gate.RunInput{History: func(context.Context, index.Filter) ([]*protocol.Result, error) { return nil, bad }}
	got, n, err := c.Confirm(t.Context(), &watch.Watcher{Manifest: m}, states, req, nil)
	if err != nil || n != 0 || got["j0"] != states["j0"] || !errors.Is(said, bad) {
		t.Fatalf("confirm with no history: %v, %d queued, said %v", err, n, said)
	}
}
