package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/s3"
)

// Defaults of QueryConfig, for the command line's flags.
const (
	DefaultQueryResults = 100000
	DefaultQueryDays    = 365
	DefaultQueryRepeat  = 3
)

// QueryConfig configures `bench query`: a filtered history query through
// the Parquet index against the raw JSON scan, on a synthetic store.
type QueryConfig struct {
	// Results synthetic results over Days date partitions (16 results a
	// run: fewer than 16 x Days leave some days empty); each at least 1.
	Results, Days int
	// Repeat is how many timed runs of each query (the median is
	// reported); at least 1.
	Repeat int
	// Filter is the query; FilterText how the report names it.
	Filter     index.Filter
	FilterText string
	// Store is where the history is written; it must hold no results nor
	// index yet. Default (nil): a fresh temporary file store, removed
	// unless Keep. StoreName is how the report names Store (a redacted
	// URL).
	Store     storage.Bucket
	StoreName string
	Keep      bool
	// DuckDB, from FindDuckDB, also runs the query in DuckDB over the same
	// part files (file stores only). Default: none.
	DuckDB *DuckDB
	// Progress receives a line per step. Default: none.
	Progress io.Writer
}

// Validate fills the defaults and names the first field out of range.
func (c *QueryConfig) Validate() error {
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--results", c.Results}, {"--days", c.Days}, {"--repeat", c.Repeat}} {
		if f.v < 1 {
			return configErr("%s %d: must be at least 1", f.name, f.v)
		}
	}
	return nil
}

// QueryReport is what `bench query` measured; its JSON form is `bench
// query --format json`.
type QueryReport struct {
	Store          string           `json:"store"`
	Results        int              `json:"results"`
	Days           int              `json:"days"`
	Filter         string           `json:"filter"`
	Matched        int              `json:"matched"`
	GenerateS      float64          `json:"generate_s"`
	CompactS       float64          `json:"compact_s"`
	JSONS          float64          `json:"json_s"`
	IndexS         float64          `json:"index_s"`
	Ratio          float64          `json:"ratio"`
	JSONRuns       []float64        `json:"json_runs_s"`
	IndexRuns      []float64        `json:"index_runs_s"`
	Stats          index.QueryStats `json:"index_stats"`
	SameResultsSet bool             `json:"same_results"`
	// S3 request counts of one run of each query (S3 stores only).
	S3IndexRequests *s3.RequestCounts `json:"s3_index_requests,omitempty"`
	S3JSONRequests  *s3.RequestCounts `json:"s3_json_requests,omitempty"`
	// DuckDB's time for the same query over the same part files.
	DuckDBS    float64   `json:"duckdb_s,omitempty"`
	DuckDBRuns []float64 `json:"duckdb_runs_s,omitempty"`
	DuckDBRows int       `json:"duckdb_rows,omitempty"`
	// The compaction: date partitions, part files written, rows indexed.
	Partitions int `json:"-"`
	Parts      int `json:"-"`
	Rows       int `json:"-"`
	// Kept is set when the temporary store was kept (Config.Keep); Store
	// is its directory.
	Kept bool `json:"-"`
	// Steal is over the timed queries only.
	Steal Steal `json:"-"`
}

// RunQuery generates the history, compacts it, then runs the query over
// the raw JSON results (index.QueryJSON) and through the index
// (index.Query), Repeat times each, alternating, and checks that both
// return the same jobs with the same documents. On an S3 store it counts
// one run's requests of each.
func RunQuery(ctx context.Context, cfg QueryConfig) (*QueryReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, where := cfg.Store, cfg.StoreName
	temp := b == nil
	if temp {
		dir, err := os.MkdirTemp("", "benchfleet-bench-query-")
		if err != nil {
			return nil, err
		}
		if !cfg.Keep {
			defer os.RemoveAll(dir)
		}
		fb, err := file.NewBucket(dir)
		if err != nil {
			return nil, err
		}
		defer fb.Close()
		b, where = fb, dir
	} else if nonEmpty, err := hasKeys(ctx, b, storage.PrefixResults, storage.PrefixIndex); err != nil {
		return nil, err
	} else if nonEmpty {
		return nil, configErr("--store %s already holds results or an index; bench query needs an empty store", where)
	}
	var parts string // the part files, for DuckDB
	if cfg.DuckDB != nil {
		fb, ok := file.As(b)
		if !ok {
			return nil, configErr("--duckdb reads the part files in place: it needs a file store, not %s", where)
		}
		parts = filepath.Join(fb.Root(), filepath.FromSlash(storage.PrefixIndex), "*", "*.parquet")
	}

	rep := &QueryReport{Store: where, Results: cfg.Results, Days: cfg.Days, Filter: cfg.FilterText, Kept: temp && cfg.Keep}
	fmt.Fprintf(cfg.Progress, "generating %d results over %d days in %s ...\n", cfg.Results, cfg.Days, where)
	start := time.Now()
	if err := index.WriteSynth(ctx, b, index.SynthOptions{Results: cfg.Results, Days: cfg.Days, End: time.Now()}); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	rep.GenerateS = time.Since(start).Seconds()
	fmt.Fprintf(cfg.Progress, "compacting ...\n")
	start = time.Now()
	cst, err := index.Compact(ctx, b, index.CompactOptions{})
	if err != nil {
		return nil, err
	}
	rep.CompactS = time.Since(start).Seconds()
	if cst.Rows != cfg.Results {
		return nil, fmt.Errorf("compact indexed %d rows, want %d", cst.Rows, cfg.Results)
	}
	rep.Partitions, rep.Parts, rep.Rows = cst.Partitions, cst.Written, cst.Rows

	fmt.Fprintf(cfg.Progress, "querying (%s), %d runs each ...\n", rep.Filter, cfg.Repeat)
	steal := stealMeter()
	var viaJSON, viaIndex []*protocol.Result
	// On S3 each run's requests are counted (the last run's are reported;
	// every run sends the same).
	s3b, onS3 := s3.As(b)
	requests := func() s3.RequestCounts {
		if onS3 {
			return s3b.Requests()
		}
		return s3.RequestCounts{}
	}
	var jsonReqs, indexReqs s3.RequestCounts
	for range cfg.Repeat {
		start, before := time.Now(), requests()
		rs, bad, err := index.QueryJSON(ctx, b, cfg.Filter)
		if err != nil {
			return nil, err
		}
		if bad > 0 {
			return nil, fmt.Errorf("json query: %d unreadable results", bad)
		}
		rep.JSONRuns = append(rep.JSONRuns, time.Since(start).Seconds())
		jsonReqs = requests().Sub(before)
		viaJSON = rs

		start, before = time.Now(), requests()
		rs, st, err := index.Query(ctx, b, cfg.Filter)
		if err != nil {
			return nil, err
		}
		rep.IndexRuns = append(rep.IndexRuns, time.Since(start).Seconds())
		indexReqs = requests().Sub(before)
		viaIndex, rep.Stats = rs, st
	}
	if err := sameResults(viaJSON, viaIndex); err != nil {
		return nil, err
	}
	if onS3 {
		rep.S3IndexRequests, rep.S3JSONRequests = &indexReqs, &jsonReqs
	}
	if cfg.DuckDB != nil {
		fmt.Fprintf(cfg.Progress, "querying in DuckDB ...\n")
		rows, runs, err := cfg.DuckDB.query(ctx, parts, cfg.Filter, cfg.Repeat)
		if err != nil {
			return nil, err
		}
		if rows != len(viaIndex) {
			return nil, fmt.Errorf("duckdb returned %d rows, the index query %d", rows, len(viaIndex))
		}
		rep.DuckDBRows, rep.DuckDBRuns, rep.DuckDBS = rows, runs, Median(runs)
	}
	rep.SameResultsSet = true
	rep.Matched = len(viaIndex)
	rep.JSONS, rep.IndexS = Median(rep.JSONRuns), Median(rep.IndexRuns)
	if rep.IndexS > 0 {
		rep.Ratio = rep.JSONS / rep.IndexS
	}
	rep.Steal = steal()
	if rep.Kept {
		fmt.Fprintf(cfg.Progress, "kept the store: --store file://%s\n", where)
	}
	return rep, nil
}

// sameResults checks that two queries returned the same jobs, in the same
// order, with the same documents.
func sameResults(viaJSON, viaIndex []*protocol.Result) error {
	ids := func(rs []*protocol.Result) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Job
		}
		return out
	}
	if !slices.Equal(ids(viaJSON), ids(viaIndex)) {
		return fmt.Errorf("index query returned %d jobs, JSON query %d: the job lists differ", len(viaIndex), len(viaJSON))
	}
	for i := range viaJSON {
		x, _ := json.Marshal(viaJSON[i])
		y, _ := json.Marshal(viaIndex[i])
		if !bytes.Equal(x, y) {
			return fmt.Errorf("job %s: the index returned a different document than the JSON result", viaJSON[i].Job)
		}
	}
	return nil
}

func hasKeys(ctx context.Context, b storage.Bucket, prefixes ...string) (bool, error) {
	for _, p := range prefixes {
		for _, err := range b.List(ctx, p) {
			if err != nil {
				return false, err
			}
			return true, nil
		}
	}
	return false, nil
}

// Print writes the report as `bench query` prints its table.
func (rep *QueryReport) Print(w io.Writer) {
	n := len(rep.JSONRuns)
	fmt.Fprintf(w, "store        %s (%d results over %d date partitions)\n", rep.Store, rep.Results, rep.Partitions)
	fmt.Fprintf(w, "generate     %.2fs\n", rep.GenerateS)
	fmt.Fprintf(w, "compact      %.2fs (%d parts, %d rows)\n", rep.CompactS, rep.Parts, rep.Rows)
	fmt.Fprintf(w, "query        %s -> %d results, identical via JSON and index\n", rep.Filter, rep.Matched)
	fmt.Fprintf(w, "json scan    %8.1f ms  (median of %d)\n", rep.JSONS*1000, n)
	fmt.Fprintf(w, "index        %8.1f ms  (median of %d; %d partitions, %d rows scanned, %d docs decoded, %d JSON read)\n",
		rep.IndexS*1000, n, rep.Stats.Partitions, rep.Stats.IndexRows, rep.Stats.DocsDecoded, rep.Stats.JSONRead)
	if rep.Ratio >= 1 {
		fmt.Fprintf(w, "ratio        %.1fx faster through the index\n", rep.Ratio)
	} else {
		fmt.Fprintf(w, "ratio        %.1fx slower through the index (a store this small is cheaper to scan)\n", 1/rep.Ratio)
	}
	if rep.DuckDBRuns != nil {
		fmt.Fprintf(w, "duckdb       %8.1f ms  (median of %d; the same query over the same part files, %d rows, as many as the index's; benchfleet's index takes %.2fx DuckDB's time)\n",
			rep.DuckDBS*1000, n, rep.DuckDBRows, rep.IndexS/rep.DuckDBS)
	}
	if rep.S3IndexRequests != nil {
		fmt.Fprintf(w, "s3 index     %s\n", rep.S3IndexRequests)
		fmt.Fprintf(w, "s3 json scan %s\n", rep.S3JSONRequests)
	}
	rep.Steal.print(w)
}
