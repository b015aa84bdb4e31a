package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// `results compact`, `results query` through the index, `results export`
// and `bench query`, driven like a user would.
func TestResultsCompactQueryExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteSynth(t.Context(), b, index.SynthOptions{Results: 300, Days: 10, End: time.Now()}); err != nil {
		t.Fatal(err)
	}
	store := "file://" + dir
	_, before, _ := run(t, "--store", store, "results", "query", "--model", "resnet50", "--format", "json")

	code, out, errOut := run(t, "--store", store, "results", "compact")
	if code != 0 || !strings.Contains(out, "compacted 10 of 10 date partitions (300 rows written") {
		t.Fatalf("compact: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "--store", store, "results", "compact")
	if code != 0 || !strings.Contains(out, "compacted 0 of 10") {
		t.Fatalf("second compact: exit %d\n%s", code, out)
	}
	code, after, errOut := run(t, "--store", store, "results", "query", "--model", "resnet50", "--format", "json")
	if code != 0 || after != before {
		t.Fatalf("query through the index differs from the JSON query (exit %d, %s)", code, errOut)
	}

	outFile := filepath.Join(dir, "runs.jsonl")
	code, _, errOut = run(t, "--store", store, "results", "export", "--format", "benchmark-jsonl", "--model", "resnet50", "--out", outFile)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var rs []map[string]any
	_ = json.Unmarshal([]byte(before), &rs)
	passed := 0
	for _, r := range rs {
		if r["status"] == "passed" {
			passed++
		}
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if passed == 0 || len(lines) != passed {
		t.Fatalf("exported %d lines, want the %d passed resnet50 results", len(lines), passed)
	}
	var first struct {
		MLModelName  string `json:"ml_model_name"`
		Measurements []struct {
			Name string `json:"name"`
		} `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.MLModelName != "resnet50" || len(first.Measurements) == 0 {
		t.Fatalf("export line %s: %v", lines[0], err)
	}
	if code, _, _ := run(t, "--store", store, "results", "export", "--format", "csv"); code != 64 {
		t.Fatalf("export --format csv: exit %d, want 64", code)
	}
}

func TestBenchQuerySmall(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "bench", "query", "--results", "600", "--days", "20", "--repeat", "1", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Matched     int     `json:"matched"`
		Ratio       float64 `json:"ratio"`
		SameResults bool    `json:"same_results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.SameResults || rep.Matched == 0 || rep.Ratio <= 0 {
		t.Fatalf("report %s: %v", out, err)
	}
}
