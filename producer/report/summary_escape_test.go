package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Job-provided text in `results query` output: a CSV cell that would be a
// spreadsheet formula starts with a quote (numbers stay numbers), and the
// table strips terminal escapes.
func TestResultsOutputEscapesJobText(t *testing.T) {
	t.Parallel()
	r := &protocol.Result{Run: "r1", Job: "j1", RunCreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Pool: "cpu",
		Status: protocol.StatusPassed}
	r.Benchmark.Model = "=HYPERLINK(\"http://evil.example\",\"x\")"
	r.Benchmark.DataFormat = "\x1b[2J\x1b]0;pwned\x07bf16"
	r.Source.Branch = "@SUM(1+1)"
	r.PCC.Value = -0.25
	var buf bytes.Buffer
	if err := WriteResults(&buf, []*protocol.Result{r}, "csv"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("csv: %v %q", err, recs)
	}
	row := map[string]string{}
	for i, h := range recs[0] {
		row[h] = recs[1][i]
	}
	if got := row["model"]; got != "'"+r.Benchmark.Model {
		t.Errorf("model cell %q: want a leading quote", got)
	}
	if got := row["branch"]; got != "'@SUM(1+1)" {
		t.Errorf("branch cell %q: want a leading quote", got)
	}
	if got := row["pcc"]; got != "-0.25" {
		t.Errorf("pcc cell %q: a number stays a number", got)
	}
	buf.Reset()
	if err := WriteResults(&buf, []*protocol.Result{r}, "table"); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("table passes terminal escapes: %q", out)
	}
}
