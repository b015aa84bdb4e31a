package cli

import (
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
	"github.com/benchfleet/benchfleet/storage"
)

// benchQueryCmd measures history queries through the Parquet index against
// the raw JSON scan on a synthetic store.
func (a *app) benchQueryCmd() *cobra.Command {
	var cfg bench.QueryConfig
	var q queryFlags
	var duckdb bool
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Measure a filtered history query: Parquet index vs raw JSON scan",
		Long:  longHelp("bench-query"),
		Example: `  benchfleet bench query
  benchfleet bench query --results 1000000 --duckdb
  benchfleet bench query --results 20000 --format json
  benchfleet bench query --model mlp --pool cpu --since 30d
  benchfleet bench query --days 90 --since 90d \
    --store 's3://bench?endpoint=http://127.0.0.1:7070&path_style=true&create=true&region=us-east-1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(q.format, "table", "json"); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return benchErr(err)
			}
			var err error
			if cfg.Filter, err = q.filter(); err != nil {
				return err
			}
			cfg.FilterText, cfg.Progress = q.query().FlagText(), a.stderr
			if duckdb {
				if cfg.DuckDB, err = bench.FindDuckDB(); err != nil {
					return err
				}
			}
			// Only an explicit --store flag is used: a BENCHFLEET_STORE in
			// the environment must not receive synthetic data by accident.
			if cmd.Flags().Changed("store") {
				if cfg.Store, err = a.openStore(cmd.Context()); err != nil {
					return err
				}
				defer cfg.Store.Close()
				cfg.StoreName = storage.Redact(a.storeURL)
			}
			rep, err := bench.RunQuery(cmd.Context(), cfg)
			if err != nil {
				return benchErr(err)
			}
			if q.format == "json" {
				return writeJSON(a.stdout, rep)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Results, "results", bench.DefaultQueryResults, "synthetic results to generate")
	f.IntVar(&cfg.Days, "days", bench.DefaultQueryDays, "days the runs are spread over (16 results per run: fewer than 16 x days results leave some days empty)")
	f.IntVar(&cfg.Repeat, "repeat", bench.DefaultQueryRepeat, "timed runs of each query (the median is reported)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the temporary store and print its path")
	f.BoolVar(&duckdb, "duckdb", false, "also run the query in DuckDB over the same part files (file stores)")
	f.StringVar(&q.format, "format", "table", "table or json")
	f.StringVar(&q.model, "model", "resnet50", "query filter: model")
	f.StringVar(&q.pool, "pool", "", "query filter: pool")
	f.StringVar(&q.branch, "branch", "", "query filter: branch")
	f.StringVar(&q.since, "since", "146d", "query filter: since")
	f.StringVar(&q.status, "status", "", "query filter: status")
	f.StringVar(&q.commit, "commit", "", "query filter: commit prefix")
	return cmd
}
