package cli

import (
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchGateCmd() *cobra.Command {
	var (
		cfg = bench.DefaultGateConfig()
		gf  gateFlags
	)
	cmd := &cobra.Command{
		Use:   "gate [--series N] [--seed S] [--confirm N]",
		Short: "Measure the regression gate: false positives and detection on synthetic series, with and without confirmation",
		Long:  longHelp("bench-gate"),
		Example: `  benchfleet bench gate
  benchfleet bench gate --series 10000 --seed 7 --threshold 3%`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, err := gf.config()
			if err != nil {
				return err
			}
			cfg.Gate, cfg.Repeats = g, g.Repeats
			cfg.Gate.Repeats = 0
			rep, err := bench.RunGate(cmd.Context(), cfg)
			if err != nil {
				return benchErr(err)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Series, "series", cfg.Series, "synthetic series to judge")
	fl.Float64Var(&cfg.Drop, "drop", cfg.Drop, "the planted drop (0.10 = 10% slower)")
	fl.Float64Var(&cfg.Planted, "planted", cfg.Planted, "fraction of the series with the planted drop")
	fl.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed (any value, 0 too)")
	gf.register(fl)
	gf.registerConfirm(fl)
	return cmd
}
