package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// bench query --duckdb runs the same query in DuckDB over the same part files
// and must find the same rows (make test installs @duckdb/node-api and sets
// BENCHFLEET_REQUIRE_DUCKDB=1, which turns a missing install into a failure).
func TestBenchQueryDuckDB(t *testing.T) {
	t.Parallel()
	if _, err := findDuckDB(); err != nil {
		if os.Getenv("BENCHFLEET_REQUIRE_DUCKDB") == "1" {
			t.Fatalf("%v (BENCHFLEET_REQUIRE_DUCKDB=1)", err)
		}
		t.Skip(err)
	}
	code, out, errOut := ciRun(t, "bench", "query", "--results", "800", "--days", "20", "--since", "10d", "--repeat", "1", "--duckdb", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Matched    int       `json:"matched"`
		DuckDBRows int       `json:"duckdb_rows"`
		DuckDBRuns []float64 `json:"duckdb_runs_s"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Matched == 0 || rep.DuckDBRows != rep.Matched || len(rep.DuckDBRuns) != 1 {
		t.Fatalf("report %s: %v", out, err)
	}
	// A filter DuckDB must quote: no rows, no SQL error.
	code, out, errOut = ciRun(t, "bench", "query", "--results", "100", "--days", "5", "--repeat", "1", "--duckdb", "--model", "it's", "--format", "json")
	if code != 0 || !strings.Contains(out, `"matched": 0`) {
		t.Fatalf("quoted filter: exit %d\n%s\n%s", code, out, errOut)
	}
}
