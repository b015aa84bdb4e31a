package bench

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// `bench query` finds the same results through the index as through the
// JSON scan, and refuses a store that holds results already.
func TestRunQuery(t *testing.T) {
	t.Parallel()
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().AddDate(0, 0, -10)
	cfg := QueryConfig{Results: 800, Days: 20, Repeat: 2, Filter: index.Filter{Model: "resnet50", Since: since},
		FilterText: "--model resnet50 --since 10d", Store: store, StoreName: "test store"}
	rep, err := RunQuery(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Matched == 0 || rep.Matched >= rep.Results || !rep.SameResultsSet || rep.Rows != 800 || rep.Partitions == 0 {
		t.Errorf("report %+v: want some of the 800 results matched, the same both ways, all indexed", rep)
	}
	if len(rep.JSONRuns) != 2 || len(rep.IndexRuns) != 2 || rep.Ratio != rep.JSONS/rep.IndexS || rep.Stats.DocsDecoded != rep.Matched {
		t.Errorf("report %+v: want 2 runs each, the ratio of the medians, one doc decoded per match", rep)
	}
	if rep.Store != "test store" || rep.Kept {
		t.Errorf("store %q, kept %t", rep.Store, rep.Kept)
	}
	_, err = RunQuery(t.Context(), cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("a store with results: %v, want a ConfigError", err)
	}
}

// With DuckDB the same query runs in DuckDB over the same part files and
// must find the same rows (make test installs @duckdb/node-api and sets
// BENCHFLEET_REQUIRE_DUCKDB=1, which turns a missing install into a failure).
func TestRunQueryDuckDB(t *testing.T) {
	t.Parallel()
	duck, err := FindDuckDB()
	if err != nil {
		if os.Getenv("BENCHFLEET_REQUIRE_DUCKDB") == "1" {
			t.Fatalf("%v (BENCHFLEET_REQUIRE_DUCKDB=1)", err)
		}
		t.Skip(err)
	}
	rep, err := RunQuery(t.Context(), QueryConfig{Results: 800, Days: 20, Repeat: 1, DuckDB: duck,
		Filter: index.Filter{Since: time.Now().AddDate(0, 0, -10)}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Matched == 0 || rep.DuckDBRows != rep.Matched || len(rep.DuckDBRuns) != 1 || rep.DuckDBS <= 0 {
		t.Fatalf("report %+v: want DuckDB's rows to be the index's", rep)
	}
	// A filter DuckDB must quote: no rows, no SQL error.
	rep, err = RunQuery(t.Context(), QueryConfig{Results: 100, Days: 5, Repeat: 1, DuckDB: duck, Filter: index.Filter{Model: "it's"}})
	if err != nil || rep.Matched != 0 || rep.DuckDBRows != 0 {
		t.Fatalf("quoted filter: %v, %+v", err, rep)
	}
}
