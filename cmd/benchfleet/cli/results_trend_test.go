package cli_test

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// trendStore is a file store with three runs of two series (resnet50 and
// mlp on n150), the mlp result of the middle run failed.
func trendStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Hour)
	for i, rate := range []float64{100, 104, 90} {
		for _, model := range []string{"resnet50", "mlp"} {
			r := &protocol.Result{Schema: protocol.SchemaResult, Run: fmt.Sprintf("run%d", i), Job: fmt.Sprintf("j%d-%s", i, model),
				RunCreatedAt: t0.Add(time.Duration(i) * 24 * time.Hour), Pool: "n150", Runner: "forge", Status: protocol.StatusPassed,
				Benchmark:    protocol.Benchmark{Model: model, BatchSize: 8, DataFormat: "bfloat16"},
				Source:       protocol.Source{Commit: fmt.Sprintf("c0ffee%02d", i), Branch: "main"},
				Measurements: protocol.Measurements{SamplesPerSec: rate, IterationMS: protocol.IterationMS{P50: 1000 / rate}},
				PCC:          protocol.PCC{Value: 0.9991, Min: 0.99, Passed: true}}
			if i == 1 && model == "mlp" {
				r.Status, r.Measurements = protocol.StatusFailed, protocol.Measurements{}
			}
			if _, err := storage.PutResult(t.Context(), b, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.Close()
	return "file://" + dir
}

func TestResultsTrend(t *testing.T) {
	t.Parallel()
	store := trendStore(t)
	out := filepath.Join(t.TempDir(), "trend.svg")
	code, stdout, errOut := run(t, "results", "trend", "--store", store, "--out", out)
	if code != 0 || !strings.Contains(stdout, "6 results") {
		t.Fatalf("trend: exit %d\n%s%s", code, stdout, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
		Panels  []struct {
			Series []struct {
				Name     string   `xml:"data-series,attr"`
				Polyline []string `xml:"polyline"`
			} `xml:"g"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document (%v):\n%s", err, data)
	}
	var names []string
	for _, p := range doc.Panels {
		for _, g := range p.Series {
			if g.Name != "" && len(g.Polyline) == 1 {
				names = append(names, g.Name)
			}
		}
	}
	if strings.Join(names, " ") != "mlp/n150/bs8/bfloat16 resnet50/n150/bs8/bfloat16" {
		t.Errorf("series lines %q", names)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// Filters apply; --metric pcc works.
	code, stdout, errOut = run(t, "results", "trend", "--store", store, "--model", "mlp", "--metric", "pcc", "--out", out)
	if code != 0 || !strings.Contains(stdout, "pcc trend of 3 results") {
		t.Fatalf("trend --model mlp --metric pcc: exit %d\n%s%s", code, stdout, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", filepath.Join(t.TempDir(), "t.png")}, "only .svg is supported"},
		{[]string{"--out", filepath.Join(t.TempDir(), "t.svg"), "--model", "nope"}, "no results match"},
		{[]string{"--out", filepath.Join(t.TempDir(), "t.svg"), "--metric", "fps"}, "--metric"},
		{[]string{"--out", filepath.Join(t.TempDir(), "t.svg"), "--status", "bogus"}, "--status"},
		{nil, "--out is required"},
	} {
		args := append([]string{"results", "trend", "--store", store}, tc.args...)
		code, _, errOut := run(t, args...)
		if code != 64 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 64 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestResultsReport(t *testing.T) {
	t.Parallel()
	store := trendStore(t)
	out := filepath.Join(t.TempDir(), "report.html")
	code, stdout, errOut := run(t, "results", "report", "--store", store, "--branch", "main", "--out", out)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{"<svg", "<td>mlp/n150/bs8/bfloat16</td>", "<td>resnet50/n150/bs8/bfloat16</td>",
		"passed: 5", "failed: 1", "c0ffee02", "run2", "-10.0%", "-13.5%", "branch main"} {
		if !strings.Contains(page, want) {
			t.Errorf("report misses %q", want)
		}
	}
	if code, _, _ := run(t, "results", "report", "--store", store, "--out", filepath.Join(t.TempDir(), "r.svg")); code != 64 {
		t.Errorf("report --out r.svg: exit %d, want 64", code)
	}
	if code, _, errOut := run(t, "results", "report", "--store", store, "--run", "run9", "--out", out); code != 64 || !strings.Contains(errOut, "no results match") {
		t.Errorf("report --run run9: exit %d %q, want 64 and no results match", code, errOut)
	}
}

// stepStore is a file store with a series of eight main runs at 1000
// samples/sec, then three at 700 (the first of them at commit step), and,
// when reason is not empty, an acceptance of that step.
func stepStore(t *testing.T, reason string) (store, step string) {
	t.Helper()
	dir := t.TempDir()
	b, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Hour)
	var r *protocol.Result
	for i, v := range []float64{1000, 1004, 997, 1006, 995, 1002, 998, 1000, 700, 703, 697} {
		r = &protocol.Result{Schema: protocol.SchemaResult, Run: fmt.Sprintf("ci-%d", i), Job: fmt.Sprintf("j%d", i),
			RunCreatedAt: t0.Add(time.Duration(i) * time.Hour), Pool: "n150", Runner: "forge", Status: protocol.StatusPassed,
			Benchmark:    protocol.Benchmark{Model: "resnet50", BatchSize: 8, DataFormat: "bfloat16"},
			Source:       protocol.Source{Commit: fmt.Sprintf("%08x%032x", 0xc0ffee00+i, i), Branch: "main"},
			Measurements: protocol.Measurements{SamplesPerSec: v}, PCC: protocol.PCC{Value: 0.9991, Min: 0.99, Passed: true}}
		if _, err := storage.PutResult(t.Context(), b, r); err != nil {
			t.Fatal(err)
		}
	}
	step = fmt.Sprintf("%08x%032x", 0xc0ffee00+8, 8)
	if reason != "" {
		if err := gate.Accept(t.Context(), b, gate.Acceptance{Series: gate.SeriesOf(r), Commit: step, Reason: reason, By: "alice@lab", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	return "file://" + dir, step
}

// `results report` lists a series' open regression two commits after the
// step, and, with an acceptance record in the store, lists it as accepted
// with its reason; `results trend` marks it so.
func TestResultsReportOpenAndAcceptedRegression(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"", "new firmware: slower, and correct"} {
		store, step := stepStore(t, reason)
		out := filepath.Join(t.TempDir(), "report.html")
		if code, stdout, errOut := run(t, "results", "report", "--store", store, "--out", out); code != 0 {
			t.Fatalf("report: exit %d\n%s%s", code, stdout, errOut)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		page := string(data)
		word, want := "open", "3 runs since"
		if reason != "" {
			word, want = "accepted", "accepted by alice@lab on "
		}
		since := word + " regression since commit <code title=\"" + step + "\">" + step[:12] + "</code> (run <code>ci-8</code>"
		if !strings.Contains(page, since) || !strings.Contains(page, want) || !strings.Contains(page, reason) {
			t.Errorf("report (reason %q) does not say %q, %q", reason, since, want)
		}
		svg := filepath.Join(t.TempDir(), "trend.svg")
		if code, stdout, errOut := run(t, "results", "trend", "--store", store, "--out", svg); code != 0 {
			t.Fatalf("trend: exit %d\n%s%s", code, stdout, errOut)
		}
		if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "-30.0% · "+word+" ") {
			t.Errorf("trend (reason %q) does not mark the step %s: %v", reason, word, err)
		}
	}
}
