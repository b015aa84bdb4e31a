package cli

import (
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchSubmitCmd() *cobra.Command {
	var cfg bench.SubmitConfig
	cmd := &cobra.Command{
		Use:   "submit [--jobs N]",
		Short: "Measure publishing a run of N jobs against raw JetStream async publish, in one run",
		Long:  longHelp("bench-submit"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Progress, cfg.Log = a.stderr, a.log
			rep, err := bench.RunSubmit(cmd.Context(), cfg)
			if err != nil {
				return benchErr(err)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Jobs, "jobs", bench.DefaultSubmitJobs, "jobs in the run (and raw messages)")
	cmd.Flags().IntVar(&cfg.Rounds, "rounds", bench.DefaultSubmitRounds, "rounds of both measurements; the median ratio is reported")
	cmd.Flags().StringVar(&cfg.Dir, "data", "", "keep the server's data (DIR/nats) and store (DIR/store) here instead of a temporary directory, for inspection")
	return cmd
}
