package producer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// The gate from stored results alone (no manifest): a failed job takes
// precedence over a regression in the same run; history is the baseline
// branch's passed results; a branch without history judges nothing; a run
// the store does not know is ErrNoRun.
func TestJudgeStored(t *testing.T) {
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
	for i, v := range around(1000, 0.01, 10) {
		created := now.Add(-time.Duration(10-i) * time.Hour)
		for _, model := range []string{"net-a", "net-b"} {
			put(histResult(fmt.Sprintf("h%d", i), model, "main", created, v))
			put(histResult(fmt.Sprintf("f%d", i), model, "feature-y", created, 5000)) // another branch
		}
		bad := histResult(fmt.Sprintf("b%d", i), "net-a", "main", created, 10)
		bad.Status = protocol.StatusFailed
		put(bad) // failed results are no history
	}
	a := histResult("pr-1", "net-a", "feature-x", now, 800)
	b := histResult("pr-1", "net-b", "feature-x", now, 1000)
	b.Status, b.Error, b.PCC = protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "pcc 0.31 below 0.99"}, protocol.PCC{Value: 0.31, Min: 0.99}
	put(a)
	put(b)

	v, err := JudgeStored(t.Context(), StoredJudge{Run: "pr-1", Store: store, Gate: true})
	if err != nil {
		t.Fatal(err)
	}
	c := CountVerdicts(v.Report.Verdicts)
	if v.Outcome != OutcomeFail || v.Report.Outcome() != OutcomeFail || c.Regressions != 1 || c.Failed != 1 {
		t.Fatalf("outcome %s/%s counts %+v; want FAIL, 1 regression and 1 failed", v.Outcome, v.Report.Outcome(), c)
	}
	for _, g := range v.Report.Verdicts {
		if g.Model == "net-a" && (g.History != 10 || *g.Baseline != 1000) {
			t.Errorf("net-a: %d results, baseline %v; want the 10 passed on main at 1000", g.History, *g.Baseline)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, v.Report); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	if !strings.Contains(s, "`pr-1`: FAIL") || !strings.Contains(s, "pcc 0.31 below 0.99") || strings.Index(s, "| net-a |") > strings.Index(s, "| net-b |") {
		t.Errorf("markdown: want FAIL, the PCC reason, the regression row first:\n%s", s)
	}

	v, err = JudgeStored(t.Context(), StoredJudge{Run: "pr-1", Store: store, Gate: true, GateConfig: GateConfig{BaselineBranch: "release-9"}})
	if err != nil || CountVerdicts(v.Report.Verdicts).InsufficientHistory != 1 || CountVerdicts(v.Report.Verdicts).Regressions != 0 {
		t.Errorf("baseline release-9: %v %+v; want no history, no regression", err, CountVerdicts(v.Report.Verdicts))
	}
	if _, err := JudgeStored(t.Context(), StoredJudge{Run: "nothing-here", Store: store}); !errors.Is(err, ErrNoRun) {
		t.Errorf("unknown run: %v, want ErrNoRun", err)
	}
}
