package cli

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) resultsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "results", Short: "Query the history of results in the store"}
	cmd.AddCommand(a.resultsQueryCmd(), a.resultsShowCmd())
	cmd.AddCommand(a.resultsExtraCmds()...)
	cmd.AddCommand(a.resultsBisectCmd())
	return cmd
}

type queryFlags struct {
	model, pool, run, commit, branch, status, since, format string
}

func (q *queryFlags) filter() (storage.Filter, error) {
	f := storage.Filter{Model: q.model, Pool: q.pool, Run: q.run, Commit: q.commit, Branch: q.branch, Status: protocol.Status(q.status)}
	if q.pool != "" && !protocol.ValidPool(q.pool) {
		return f, usageErr("--pool %q: want one of %s", q.pool, strings.Join(protocol.Pools, ", "))
	}
	if q.run != "" {
		if err := protocol.ValidID("run", q.run); err != nil {
			return f, usageErr("--run: %v", err)
		}
	}
	switch f.Status {
	case "", protocol.StatusPassed, protocol.StatusFailed, protocol.StatusError, protocol.StatusTimeout, protocol.StatusCancelled:
	default:
		return f, usageErr("--status %q: want passed, failed, error, timeout or cancelled", q.status)
	}
	if q.since != "" {
		t, err := parseSince(q.since, time.Now())
		if err != nil {
			return f, usageErr("--since %q: %v", q.since, err)
		}
		f.Since = t
	}
	return f, nil
}

// parseSince accepts a date (2026-11-01), an RFC 3339 time, or an age such
// as 72h or 30d.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("want a date (2006-01-02), an RFC 3339 time, or an age like 72h or 30d")
}

func (a *app) resultsQueryCmd() *cobra.Command {
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Query results by model, pool, run, commit, branch, date and status",
		Example: `  benchfleet results query --model resnet50 --since 30d
  benchfleet results query --run RUN --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(q.format, "table", "json", "csv"); err != nil {
				return err
			}
			f, err := q.filter()
			if err != nil {
				return err
			}
			rs, err := a.queryStore(cmd.Context(), f)
			if err != nil {
				return err
			}
			return writeResults(a.stdout, rs, q.format)
		},
	}
	addFilterFlags(cmd, &q, "", "passed, failed, error, timeout or cancelled")
	cmd.Flags().StringVar(&q.format, "format", "table", "table, json (an array of Result documents) or csv")
	return cmd
}

// addFilterFlags adds the filters of `results query` (without --format);
// --status defaults to status with the given help.
func addFilterFlags(cmd *cobra.Command, q *queryFlags, status, statusHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&q.model, "model", "", "model name")
	fl.StringVar(&q.pool, "pool", "", "pool (board kind)")
	fl.StringVar(&q.run, "run", "", "run id")
	fl.StringVar(&q.commit, "commit", "", "source commit (a prefix matches)")
	fl.StringVar(&q.branch, "branch", "", "source branch")
	fl.StringVar(&q.since, "since", "", "runs created since a date (2026-11-01), a time, or an age (72h, 30d)")
	fl.StringVar(&q.status, "status", status, statusHelp)
}

func (a *app) resultsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use: "show JOB", Short: "Print one job's Result document", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := protocol.ValidID("job", args[0]); err != nil {
				return usageErr("%v", err)
			}
			rs, err := a.queryStore(cmd.Context(), storage.Filter{Job: args[0]})
			if err != nil {
				return err
			}
			if len(rs) == 0 {
				// Not found is an answer, not a usage error.
				return &exitError{code: ExitFailed, err: fmt.Errorf("no result for job %q in %s", args[0], storage.Redact(a.storeURL))}
			}
			return writeJSON(a.stdout, rs[len(rs)-1])
		},
	}
}

func writeResults(w interface{ Write([]byte) (int, error) }, rs []*protocol.Result, format string) error {
	switch format {
	case "json":
		if rs == nil {
			rs = []*protocol.Result{}
		}
		return writeJSON(w, rs)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"run", "job", "created", "model", "pool", "runner", "batch_size", "data_format", "status",
			"samples_per_sec", "pcc", "p50_ms", "commit", "branch", "worker", "device", "attempt",
			"build_kind", "build_commit", "build_cache", "setup_s"})
		for _, r := range rs {
			var build protocol.BuildInfo
			if r.Build != nil {
				build = *r.Build
			}
			_ = cw.Write(escape.CSVRow([]string{r.Run, r.Job, r.RunCreatedAt.Format(time.RFC3339), r.Benchmark.Model, r.Pool, r.Runner,
				strconv.Itoa(r.Benchmark.BatchSize), r.Benchmark.DataFormat, string(r.Status),
				csvNum(r.Measurements.SamplesPerSec), csvNum(r.PCC.Value),
				csvNum(r.Measurements.IterationMS.P50), r.Source.Commit, r.Source.Branch,
				r.Worker.ID, r.Device.ID, strconv.Itoa(r.Attempt),
				build.Kind, build.Commit, build.Cache, csvNum(r.Phases.SetupS)}))
		}
		cw.Flush()
		return cw.Error()
	default:
		tw := tabwriter.NewWriter(escape.TerminalWriter(w), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CREATED\tRUN\tJOB\tMODEL\tPOOL\tBATCH\tFORMAT\tSAMPLES/S\tPCC\tSTATUS\tCOMMIT")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.RunCreatedAt.Format("2006-01-02 15:04"),
				r.Run, r.Job, r.Benchmark.Model, r.Pool, r.Benchmark.BatchSize, r.Benchmark.DataFormat,
				producer.FmtRate(r.Measurements.SamplesPerSec), producer.FmtPCC(r.PCC.Value), r.Status, producer.ShortCommit(r.Source.Commit))
		}
		fmt.Fprintf(tw, "(%s)\n", count(len(rs), "result"))
		return tw.Flush()
	}
}

// csvNum is a measured figure, or empty when it was not measured (0).
func csvNum(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
