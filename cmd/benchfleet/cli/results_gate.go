package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// gateFlags are the regression gate's tuning flags, shared by `submit`,
// `results gate`, `serve` and `bench gate`.
type gateFlags struct{ o gate.GateOptions }

func (g *gateFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.o.BaselineBranch, "baseline-branch", gate.DefaultBaselineBranch, "branch whose passed results are the baseline")
	fs.IntVar(&g.o.Window, "window", gate.DefaultWindow, "baseline: median of the last N passed runs of each series' current segment (since its last change point)")
	fs.StringVar(&g.o.Threshold, "threshold", gate.FmtPercent(gate.DefaultThreshold), `a drop beyond this (and beyond the noise band) is a regression: "5%" or "0.05"`)
	fs.IntVar(&g.o.MinHistory, "min-history", gate.DefaultMinHistory, "fewer baseline results than this: insufficient-history (reported, not failed)")
	fs.Float64Var(&g.o.NoiseK, "noise-k", gate.DefaultNoiseK, "noise band = k·σ, σ = 1.4826·MAD within the series' segments")
}

// registerConfirm adds --confirm, for the commands that can re-queue.
func (g *gateFlags) registerConfirm(fs *pflag.FlagSet) {
	fs.IntVar(&g.o.Repeats, "confirm", gate.DefaultRepeats, "re-run a suspected regression N more times (high priority, on other boards when the pool has them) and fail only when the median of its attempts regressed too; 0: fail at once")
}

// config validates the flags; every error is a usage error naming its flag.
func (g *gateFlags) config() (gate.GateConfig, error) {
	cfg, err := g.o.Config()
	if err != nil {
		return cfg, usageErr("--%v", err)
	}
	return cfg, nil
}

// historyFrom reads baseline history through the CLI's results query
// (which uses the Parquet index where there is one).
func (a *app) historyFrom(b storage.Bucket) gate.HistoryFunc {
	return func(ctx context.Context, f index.Filter) ([]*protocol.Result, error) { return a.query(ctx, b, f) }
}

func (a *app) resultsGateCmds() []*cobra.Command {
	return []*cobra.Command{a.resultsGateCmd(), a.resultsCompareCmd()}
}

func (a *app) resultsGateCmd() *cobra.Command {
	var (
		gf                     gateFlags
		nf                     notifyFlags
		run, format            string
		junitPath, summaryPath string
		timeout                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "gate --run RUN",
		Short: "Apply the regression gate to a finished run (exit 2 on a regression)",
		Long: longHelp("results-gate") + gateHelp + `

` + gateExitHelp + `

JSON output: an array of {job, model, pool, batch_size, data_format,
baseline, value, change, verdict}; baseline and change are null without
history; a job with repeats also has confirmation {attempts, median,
reproduced}, and its value and change are the median's; open_regressions
lists the series' open (and accepted) regressions: {series, series_name,
since_commit, since_run, since_time, last_good_commit, before, level, now,
change, runs, accepted {by, at, reason}, bisect}. The run's manifest is read from the store (runs/<run>/manifest.json),
so only --store is needed; without a manifest the run's results are used.

` + notifyHelp,
		Example: `  benchfleet results gate --run ci-fleet-3f2a9c1e0b7d-1a2b3c
  benchfleet results gate --run RUN --threshold 3% --window 20 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			if run == "" {
				return usageErr("--run: give the run to gate")
			}
			if err := protocol.ValidID("run", run); err != nil {
				return usageErr("--run: %v", err)
			}
			cfg, err := gf.config()
			if err != nil {
				return err
			}
			if err := nf.check(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			b, err := a.openStoreRead(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			v, err := watch.JudgeRunWaiting(ctx, gate.RunInput{Run: run, Store: b, History: a.historyFrom(b), Gate: true, GateConfig: cfg},
				func(o watch.Outage) { fmt.Fprintf(a.stderr, "warning: %s\n", o) })
			switch {
			case errors.Is(err, gate.ErrNoRun), errors.Is(err, gate.ErrGateConfig):
				return usageErr("%v", err)
			case err != nil:
				return err
			}
			rep := v.Report
			if format == "json" {
				err = writeJSON(a.stdout, append([]gate.GateRow{}, rep.Verdicts...))
			} else {
				err = report.WriteGateTable(a.stdout, rep)
			}
			if err != nil {
				return err
			}
			if err := report.WriteFiles(rep, junitPath, summaryPath); err != nil {
				return err
			}
			nf.send(ctx, a, b, rep)
			if code := outcomeCode(v.Outcome); code != ExitOK {
				return exitCode(code)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&run, "run", "", "the run to gate (required)")
	fl.StringVar(&format, "format", "table", "table or json")
	fl.DurationVar(&timeout, "timeout", 30*time.Minute, "while the store does not answer, keep trying this long (then exit 69)")
	fl.StringVar(&junitPath, "junit", "", "also write a JUnit XML report here")
	fl.StringVar(&summaryPath, "summary-md", "", "also append a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)")
	gf.register(fl)
	nf.register(fl)
	fl.StringVar(&nf.commit, "commit", os.Getenv("GITHUB_SHA"), "with --github-token: the commit to set the status on; the run's must be the same (env GITHUB_SHA)")
	fl.StringVar(&nf.repo, "repo", os.Getenv("GITHUB_REPOSITORY"), "with --github-token: the repository of --commit (env GITHUB_REPOSITORY)")
	return cmd
}

func (a *app) resultsCompareCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "compare RUN_A RUN_B",
		Short:   "Compare two runs series by series: samples/sec in A and B and the change",
		Long:    longHelp("results-compare"),
		Example: `  benchfleet results compare nightly-20261129 nightly-20261130`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			b, err := a.openStoreRead(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			c, err := gate.CompareRuns(cmd.Context(), a.historyFrom(b), args[0], args[1])
			if errors.Is(err, gate.ErrNoResults) || errors.Is(err, protocol.ErrInvalid) {
				return usageErr("%v", err)
			} else if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(a.stdout, append([]gate.CompareRow{}, c.Rows...))
			}
			return report.WriteCompareTable(a.stdout, c, args[0], args[1])
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	return cmd
}
