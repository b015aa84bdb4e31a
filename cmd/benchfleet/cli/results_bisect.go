package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/bisect"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

func (a *app) resultsBisectCmd() *cobra.Command {
	var c bisect.BisectConfig
	var good, bad, mirror, commits, threshold string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "bisect --model M --batch-size N --pool P --good SHA --bad SHA (--mirror DIR | --commits FILE)",
		Short: "Find the first bad commit of a regressed series by measuring the commits' stored builds on the fleet",
		Long:  longHelp("results-bisect"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if c.Threshold, err = gate.ParseThreshold(threshold); err != nil {
				err = fmt.Errorf("%w: --threshold: %w", bisect.ErrBisectInput, err)
			} else if err = c.Resolve(ctx, mirror, commits, good, bad); err == nil {
				err = a.bisect(ctx, c)
			}
			if errors.Is(err, bisect.ErrBisectInput) {
				return usageErr("%v", err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Series.Model, "model", "", "the series' model (required)")
	fl.IntVar(&c.Series.BatchSize, "batch-size", 0, "the series' batch size (required)")
	fl.StringVar(&c.Series.DataFormat, "data-format", protocol.FormatBfloat16, "the series' data format: float32 or bfloat16")
	fl.StringVar(&c.Series.Pool, "pool", "", "the series' pool (required; a harness pool: a bisect measures builds)")
	fl.StringVar(&c.Series.Test, "test", "", "the series' test id (default: its stored results')")
	fl.StringVar(&c.Series.Runner, "runner", "", "the series' runner (default: its stored results')")
	fl.StringVar(&good, "good", "", "the last commit known good (hex, full or abbreviated; required)")
	fl.StringVar(&bad, "bad", "", "the commit known bad (hex, full or abbreviated; required)")
	fl.StringVar(&mirror, "mirror", "", "a clone or bare mirror of the repository to list the commits from")
	fl.StringVar(&commits, "commits", "", "a file of the commits, one a line, oldest first (instead of --mirror)")
	fl.IntVar(&c.Repeats, "repeats", bisect.DefaultBisectRepeats, "confirmation repeats of every commit measured")
	fl.StringVar(&threshold, "threshold", gate.FmtPercent(gate.DefaultThreshold), "the least drop of --bad against --good to bisect")
	fl.DurationVar(&timeout, "timeout", 6*time.Hour, "give up after this long")
	return cmd
}

func (a *app) bisect(ctx context.Context, c bisect.BisectConfig) error {
	nc, err := a.connect(ctx, "benchfleet-bisect")
	if err != nil {
		return err
	}
	defer nc.Close()
	p := &submit.Submitter{JS: nc.JS, Log: a.log}
	topo, err := topology.Ensure(ctx, nc.JS, topology.Config{Log: a.log})
	if err == nil {
		p.Runs, p.Jobs = topo.Runs, topo.Jobs
		p.Store, err = a.openStore(ctx)
	}
	if err != nil {
		return err
	}
	defer p.Store.Close()
	b := &bisect.Bisector{Submitter: p, Progress: func(r bisect.BisectRound) { fmt.Fprintln(a.stderr, r) }}
	rep, err := b.Bisect(ctx, c)
	if rep != nil {
		rep.WriteText(a.stdout)
	}
	return err
}
