package cli

import (
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchGateCmd() *cobra.Command {
	var (
		cfg bench.GateConfig
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
			cfg.Gate, cfg.Repeats = g, max(g.Repeats, 1)
			cfg.Gate.Repeats = 0
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			rep, err := bench.RunGate(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Series, "series", 1000, "synthetic series to judge")
	fl.Float64Var(&cfg.Drop, "drop", 0.10, "the planted drop (0.10 = 10% slower)")
	fl.Float64Var(&cfg.Planted, "planted", 0.5, "fraction of the series with the planted drop")
	fl.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	gf.register(fl)
	gf.registerConfirm(fl)
	return cmd
}
