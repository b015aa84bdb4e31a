package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/storage/export"
	"github.com/benchfleet/benchfleet/storage/index"
)

func (a *app) resultsCompactCmd() *cobra.Command {
	var (
		since string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Bring the Parquet index (index/v1/date=.../part-*.parquet) up to date",
		Long:  longHelp("results-compact"),
		Example: `  benchfleet results compact
  benchfleet results compact --since 7d
  benchfleet results compact --force     # rewrite every part (repairs a damaged one)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := index.CompactOptions{Force: force}
			if since != "" {
				t, err := report.ParseSince(since, time.Now())
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
			rep, err := index.Maintain(ctx, b, opts)
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
		Long:  longHelp("results-export"),
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
