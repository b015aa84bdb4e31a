package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/export"
)

func (a *app) resultsCompactCmd() *cobra.Command {
	var (
		since string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Bring the Parquet index (index/v1/date=.../part-*.parquet) up to date",
		Long: `Compact writes, for every date partition whose results changed since the last
compaction, one Parquet part covering all of that date's results, then
deletes the part it replaces. Running it again without new results does
nothing. Queries read the index for compacted dates and the JSON results
for everything the index does not cover yet, so compaction never hides a
result. The parts are Hive-partitioned: DuckDB, Spark, Trino or Athena can
read index/v1/ in place (columns: docs/schema-parquet.md). On a file store it
also removes temporary files (.tmp-*) older than an hour, left by writes of
processes killed midway.`,
		Example: `  benchfleet results compact
  benchfleet results compact --since 7d
  benchfleet results compact --force     # rewrite every part (repairs a damaged one)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := storage.CompactOptions{Force: force}
			if since != "" {
				t, err := producer.ParseSince(since, time.Now())
				if err != nil {
					return usageErr("--since %q: %v", since, err)
				}
				opts.Since = t
			}
			ctx := cmd.Context()
			b, err := a.openStoreRead(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			rep, err := storage.Maintain(ctx, b, opts)
			if rep.TempsErr != nil {
				a.log.Warn().Err(rep.TempsErr).Msg("could not remove stale temporary files")
			}
			for _, k := range rep.Unreadable {
				a.log.Warn().Str("key", k).Msg("result could not be decoded; left out of the index")
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only partitions since a date (2026-11-01), a time, or an age (72h, 30d)")
	cmd.Flags().BoolVar(&force, "force", false, "rewrite every partition's part even when it is current")
	return cmd
}

func (a *app) resultsExportCmd() *cobra.Command {
	var (
		q   queryFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "export --format benchmark-jsonl",
		Short: "Export results as Tenstorrent CompleteBenchmarkRun JSON lines",
		Long: `Export writes one JSON object per line in the shape of Tenstorrent's
CompleteBenchmarkRun record (run_start_ts, run_end_ts, run_type, git_*,
device_hostname, device_info, ml_model_name, ..., measurements[...]), so the
results can be loaded into their benchmark database and dashboards.

By default only passed results are exported (the upstream harness writes a
report only for a passing test); --status all exports every status. The
other filters are those of 'results query'.`,
		Example: `  benchfleet results export --format benchmark-jsonl --since 1d --out runs.jsonl
  benchfleet results export --format benchmark-jsonl --run RUN --status all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(q.format, "benchmark-jsonl"); err != nil {
				return err
			}
			if q.status == "all" {
				q.status = ""
			}
			f, err := q.filter()
			if err != nil {
				return err
			}
			rs, err := a.queryStore(cmd.Context(), f)
			if err != nil {
				return err
			}
			err = export.WriteTo(a.stdout, out, rs)
			if pe := (*export.PathError)(nil); errors.As(err, &pe) {
				return usageErr("--out %v", pe)
			}
			if err != nil && out != "" {
				return fmt.Errorf("--out %w", err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&q.format, "format", "benchmark-jsonl", "export format: benchmark-jsonl")
	fl.StringVar(&out, "out", "", "write to this file (atomically) instead of stdout; a directory (existing, or ending in /) gets one benchmark_<pipeline>_<time>.jsonl per CI run, as Tenstorrent's loader names them")
	// Export defaults to passed results: upstream writes a report only for
	// a passing test.
	addFilterFlags(cmd, &q, "passed", "passed, failed, error, timeout, cancelled or all")
	return cmd
}
