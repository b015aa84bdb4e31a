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
		Short: "Measure the regression gate: false positives and detection on synthetic series, with and without confirmation, and after a step",
		Long:  longHelp("bench-gate"),
		Example: `  benchfleet bench gate
  benchfleet bench gate --series 10000 --seed 7 --threshold 3%`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, err := gf.config()
			if err != nil {
				return err
			}
			cfg.Gate = g
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
	// The bench's own --confirm, checked by the bench alone (the gate's takes 0).
	fl.IntVar(&cfg.Repeats, "confirm", cfg.Repeats, "re-run a suspect N more times in the confirmed figures (1 to 20: the bench compares the gate with and without confirmation)")
	gf.register(fl)
	return cmd
}
