package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

type benchQueryFlags struct {
	results, days, repeat int
	keep, duckdb          bool
	format                string
	q                     queryFlags
}

// benchQueryReport is the JSON output of bench query.
type benchQueryReport struct {
	Store          string             `json:"store"`
	Results        int                `json:"results"`
	Days           int                `json:"days"`
	Filter         string             `json:"filter"`
	Matched        int                `json:"matched"`
	GenerateS      float64            `json:"generate_s"`
	CompactS       float64            `json:"compact_s"`
	JSONS          float64            `json:"json_s"`
	IndexS         float64            `json:"index_s"`
	Ratio          float64            `json:"ratio"`
	JSONRuns       []float64          `json:"json_runs_s"`
	IndexRuns      []float64          `json:"index_runs_s"`
	Stats          storage.QueryStats `json:"index_stats"`
	SameResultsSet bool               `json:"same_results"`
	// S3 request counts of one run of each query (S3 stores only).
	S3IndexRequests *storage.S3RequestCounts `json:"s3_index_requests,omitempty"`
	S3JSONRequests  *storage.S3RequestCounts `json:"s3_json_requests,omitempty"`
	// DuckDB's time for the same query over the same part files (--duckdb).
	DuckDBS    float64   `json:"duckdb_s,omitempty"`
	DuckDBRuns []float64 `json:"duckdb_runs_s,omitempty"`
	DuckDBRows int       `json:"duckdb_rows,omitempty"`
}

// benchQueryCmd measures history queries through the Parquet index against
// the raw JSON scan on a synthetic store.
func (a *app) benchQueryCmd() *cobra.Command {
	var fl benchQueryFlags
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Measure a filtered history query: Parquet index vs raw JSON scan",
		Long: `bench query fills a store with a synthetic history (--results results over
--days date partitions, several models, pools and branches), compacts it,
then runs the same filtered query over the raw JSON results
(storage.QueryJSON) and through the index (storage.Query), --repeat times
each, alternating. It checks that both return the same jobs with the same
documents and prints the median times and their ratio. The default filter
(--model resnet50 --since 146d) returns about 5% of the results.

The store is a fresh temporary directory (removed unless --keep) or, with
an explicit --store, that store, which must not hold results yet. On an S3
store it also prints the S3 requests of one run of each query: through the
index they depend on the number of date partitions, not of results.

With --duckdb it runs the same query in DuckDB over the same part files
(file stores only; needs node and scripts/install-duckdb.sh, which make
tools runs; found in .tools/duckdb of the repository you run it from, or in
BENCHFLEET_DUCKDB_DIR) and prints DuckDB's median beside benchfleet's.`,
		Example: `  benchfleet bench query
  benchfleet bench query --results 1000000 --duckdb
  benchfleet bench query --results 20000 --format json
  benchfleet bench query --model mlp --pool cpu --since 30d
  benchfleet bench query --days 90 --since 90d \
    --store 's3://bench?endpoint=http://127.0.0.1:7070&path_style=true&create=true&region=us-east-1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runBenchQuery(cmd, &fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.results, "results", 100000, "synthetic results to generate")
	f.IntVar(&fl.days, "days", 365, "days the runs are spread over (16 results per run: fewer than 16 x days results leave some days empty)")
	f.IntVar(&fl.repeat, "repeat", 3, "timed runs of each query (the median is reported)")
	f.BoolVar(&fl.keep, "keep", false, "keep the temporary store and print its path")
	f.BoolVar(&fl.duckdb, "duckdb", false, "also run the query in DuckDB over the same part files (file stores)")
	f.StringVar(&fl.format, "format", "table", "table or json")
	f.StringVar(&fl.q.model, "model", "resnet50", "query filter: model")
	f.StringVar(&fl.q.pool, "pool", "", "query filter: pool")
	f.StringVar(&fl.q.branch, "branch", "", "query filter: branch")
	f.StringVar(&fl.q.since, "since", "146d", "query filter: since")
	f.StringVar(&fl.q.status, "status", "", "query filter: status")
	f.StringVar(&fl.q.commit, "commit", "", "query filter: commit prefix")
	return cmd
}

func (a *app) runBenchQuery(cmd *cobra.Command, fl *benchQueryFlags) error {
	if err := checkFormat(fl.format, "table", "json"); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--results", fl.results}, {"--days", fl.days}, {"--repeat", fl.repeat}} {
		if f.v < 1 {
			return usageErr("%s %d: must be at least 1", f.name, f.v)
		}
	}
	filter, err := fl.q.filter()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	// --duckdb's DuckDB is looked for before any work; its file store is
	// checked once the store is open, before anything is written to it.
	var duck *duckDB
	if fl.duckdb {
		if duck, err = findDuckDB(); err != nil {
			return err
		}
	}
	// Only an explicit --store flag is used: a BENCHFLEET_STORE in the
	// environment must not receive synthetic data by accident.
	var (
		b     storage.Bucket
		where string
	)
	if cmd.Flags().Changed("store") {
		b, err = a.openStore(ctx)
		if err != nil {
			return err
		}
		where = storage.Redact(a.storeURL)
		if nonEmpty, err := hasKeys(ctx, b, storage.PrefixResults, storage.PrefixIndex); err != nil {
			b.Close()
			return err
		} else if nonEmpty {
			b.Close()
			return usageErr("--store %s already holds results or an index; bench query needs an empty store", where)
		}
	} else {
		dir, err := os.MkdirTemp("", "benchfleet-bench-query-")
		if err != nil {
			return err
		}
		if !fl.keep {
			defer os.RemoveAll(dir)
		}
		fb, err := storage.NewFileBucket(dir)
		if err != nil {
			return err
		}
		b, where = fb, dir
	}
	defer b.Close()
	if duck != nil {
		fb, ok := storage.AsFile(b)
		if !ok {
			return usageErr("--duckdb reads the part files in place: it needs a file store, not %s", where)
		}
		duck.glob = filepath.Join(fb.Root(), filepath.FromSlash(storage.PrefixIndex), "*", "*.parquet")
	}

	rep := benchQueryReport{Store: where, Results: fl.results, Days: fl.days, Filter: describeFilter(fl.q)}
	fmt.Fprintf(a.stderr, "generating %d results over %d days in %s ...\n", fl.results, fl.days, where)
	start := time.Now()
	if err := storage.WriteSynth(ctx, b, storage.SynthOptions{Results: fl.results, Days: fl.days, End: time.Now()}); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	rep.GenerateS = time.Since(start).Seconds()
	fmt.Fprintf(a.stderr, "compacting ...\n")
	start = time.Now()
	cst, err := storage.Compact(ctx, b, storage.CompactOptions{})
	if err != nil {
		return err
	}
	rep.CompactS = time.Since(start).Seconds()
	if cst.Rows != fl.results {
		return fmt.Errorf("compact indexed %d rows, want %d", cst.Rows, fl.results)
	}

	fmt.Fprintf(a.stderr, "querying (%s), %d runs each ...\n", rep.Filter, fl.repeat)
	// The steal of the timed queries only (not of generating and compacting).
	steal := stealMeter()
	var viaJSON, viaIndex []*protocol.Result
	// On S3 each run's requests are counted too (the counts of the last
	// run are reported; every run sends the same).
	s3b, onS3 := storage.AsS3(b)
	requests := func() storage.S3RequestCounts {
		if onS3 {
			return s3b.Requests()
		}
		return storage.S3RequestCounts{}
	}
	var jsonReqs, indexReqs storage.S3RequestCounts
	for range fl.repeat {
		start, before := time.Now(), requests()
		rs, bad, err := storage.QueryJSON(ctx, b, filter)
		if err != nil {
			return err
		}
		if bad > 0 {
			return fmt.Errorf("json query: %d unreadable results", bad)
		}
		rep.JSONRuns = append(rep.JSONRuns, time.Since(start).Seconds())
		jsonReqs = requests().Sub(before)
		viaJSON = rs

		start, before = time.Now(), requests()
		rs, st, err := storage.Query(ctx, b, filter)
		if err != nil {
			return err
		}
		rep.IndexRuns = append(rep.IndexRuns, time.Since(start).Seconds())
		indexReqs = requests().Sub(before)
		viaIndex, rep.Stats = rs, st
	}
	if err := sameResults(viaJSON, viaIndex); err != nil {
		return err
	}
	if onS3 {
		rep.S3IndexRequests, rep.S3JSONRequests = &indexReqs, &jsonReqs
	}
	if duck != nil {
		fmt.Fprintf(a.stderr, "querying in DuckDB ...\n")
		rows, runs, err := duck.query(ctx, filter, fl.repeat)
		if err != nil {
			return err
		}
		if rows != len(viaIndex) {
			return fmt.Errorf("duckdb returned %d rows, the index query %d", rows, len(viaIndex))
		}
		rep.DuckDBRows, rep.DuckDBRuns, rep.DuckDBS = rows, runs, median(runs)
	}
	rep.SameResultsSet = true
	rep.Matched = len(viaIndex)
	rep.JSONS, rep.IndexS = median(rep.JSONRuns), median(rep.IndexRuns)
	if rep.IndexS > 0 {
		rep.Ratio = rep.JSONS / rep.IndexS
	}
	if fl.keep && !cmd.Flags().Changed("store") {
		fmt.Fprintf(a.stderr, "kept the store: --store file://%s\n", where)
	}
	if fl.format == "json" {
		return writeJSON(a.stdout, rep)
	}
	w := a.stdout
	fmt.Fprintf(w, "store        %s (%d results over %d date partitions)\n", rep.Store, rep.Results, cst.Partitions)
	fmt.Fprintf(w, "generate     %.2fs\n", rep.GenerateS)
	fmt.Fprintf(w, "compact      %.2fs (%d parts, %d rows)\n", rep.CompactS, cst.Written, cst.Rows)
	fmt.Fprintf(w, "query        %s -> %d results, identical via JSON and index\n", rep.Filter, rep.Matched)
	fmt.Fprintf(w, "json scan    %8.1f ms  (median of %d)\n", rep.JSONS*1000, fl.repeat)
	fmt.Fprintf(w, "index        %8.1f ms  (median of %d; %d partitions, %d rows scanned, %d docs decoded, %d JSON read)\n",
		rep.IndexS*1000, fl.repeat, rep.Stats.Partitions, rep.Stats.IndexRows, rep.Stats.DocsDecoded, rep.Stats.JSONRead)
	if rep.Ratio >= 1 {
		fmt.Fprintf(w, "ratio        %.1fx faster through the index\n", rep.Ratio)
	} else {
		fmt.Fprintf(w, "ratio        %.1fx slower through the index (a store this small is cheaper to scan)\n", 1/rep.Ratio)
	}
	if rep.DuckDBRuns != nil {
		fmt.Fprintf(w, "duckdb       %8.1f ms  (median of %d; the same query over the same part files, %d rows, as many as the index's; benchfleet's index takes %.2fx DuckDB's time)\n",
			rep.DuckDBS*1000, fl.repeat, rep.DuckDBRows, rep.IndexS/rep.DuckDBS)
	}
	if rep.S3IndexRequests != nil {
		fmt.Fprintf(w, "s3 index     %s\n", rep.S3IndexRequests)
		fmt.Fprintf(w, "s3 json scan %s\n", rep.S3JSONRequests)
	}
	printSteal(w, steal)
	return nil
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

func describeFilter(q queryFlags) string {
	s := ""
	for _, kv := range [][2]string{{"model", q.model}, {"pool", q.pool}, {"branch", q.branch}, {"since", q.since},
		{"status", q.status}, {"commit", q.commit}} {
		if kv[1] != "" {
			s += fmt.Sprintf(" --%s %s", kv[0], kv[1])
		}
	}
	if s == "" {
		return "(no filter)"
	}
	return s[1:]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
