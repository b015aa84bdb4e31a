package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
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

func (q *queryFlags) query() report.ResultQuery {
	return report.ResultQuery{Model: q.model, Pool: q.pool, Run: q.run, Commit: q.commit, Branch: q.branch, Status: q.status, Since: q.since}
}

// filter validates the filters; an error is a usage error naming its flag.
func (q *queryFlags) filter() (index.Filter, error) {
	f, err := q.query().Filter(time.Now())
	if err != nil {
		return f, usageErr("--%v", err)
	}
	return f, nil
}

// describe lists the filters set, e.g. " — model resnet50, since 30d".
func (q *queryFlags) describe() string { return q.query().Describe() }

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
			return report.WriteResults(a.stdout, rs, q.format)
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
			rs, err := a.queryStore(cmd.Context(), index.Filter{Job: args[0]})
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
