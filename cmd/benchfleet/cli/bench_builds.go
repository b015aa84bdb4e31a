package cli

import (
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchBuildsCmd() *cobra.Command {
	var cfg bench.BuildsConfig
	cmd := &cobra.Command{
		Use:   "builds [--jobs N] [--rounds R]",
		Short: "Measure the build cache: a cold setup against venv and pip by hand, a cache hit against the host's build",
		Long:  longHelp("bench-builds"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log, cfg.Progress = a.benchLog(), a.stderr
			rep, err := bench.RunBuilds(cmd.Context(), cfg)
			if err != nil {
				return benchErr(err)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Jobs, "jobs", bench.DefaultBuildsJobs, "jobs of each build (cached, host)")
	cmd.Flags().IntVar(&cfg.Rounds, "rounds", bench.DefaultBuildsRounds, "cold setups and setups by hand")
	cmd.Flags().StringVar(&cfg.Python, "python", bench.DefaultPython, "the harness's interpreter (absolute)")
	return cmd
}
