package cli

import (
	"fmt"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/benchbuilds"
)

func (a *app) benchBuildsCmd() *cobra.Command {
	var cfg benchbuilds.Config
	cmd := &cobra.Command{
		Use:   "builds [--jobs N] [--rounds R]",
		Short: "Measure the build cache: a cold setup against venv and pip by hand, a cache hit against the host's build",
		Long: `Measure the build cache (device/build) against baselines taken in the
same run:

- cold: a fresh cache provisions a build (the repository's mirror, the
  commit's test tree, an environment with the job's wheel), against the
  same python -m venv --system-site-packages plus pip install --no-deps
  --no-index of the wheel run by hand (--rounds of each, interleaved);
- hit: --jobs jobs of the cached build and as many of the host's build,
  interleaved, run by the forge harness runner under real pytest in the
  box: the median difference is what a cache hit adds to a job.

The repository (real git) and the wheel are made at run time; nothing
reaches a package index. Needs Debian's python3-venv, python3-pip and
python3-pytest for --python.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log = a.log.Level(max(a.log.GetLevel(), zerolog.WarnLevel))
			cfg.Progress = a.stderr
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			defer printSteal(a.stdout, stealMeter())
			rep, err := benchbuilds.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			for i := range rep.Cold {
				fmt.Fprintf(a.stdout, "round %d  by hand %6.3fs  by hand without pip %6.3fs  cold setup %6.3fs  ratio %.3f\n", i+1,
					rep.ByHand[i].Seconds(), rep.Lean[i].Seconds(), rep.Cold[i].Seconds(), rep.Cold[i].Seconds()/rep.ByHand[i].Seconds())
			}
			fmt.Fprintf(a.stdout, "cold setup / by hand: %.3f (median %.3fs / %.3fs, %d rounds; the issue's bound: ≤ 1.3)\n",
				rep.ColdRatio(), benchbuilds.Median(rep.Cold).Seconds(), benchbuilds.Median(rep.ByHand).Seconds(), len(rep.Cold))
			fmt.Fprintf(a.stdout, "cold setup / by hand without a pip of its own (venv --without-pip, the base's pip installs): %.3f (median %.3fs / %.3fs): what the cache adds over the same work (mirror, tree, checks)\n",
				rep.LeanRatio(), benchbuilds.Median(rep.Cold).Seconds(), benchbuilds.Median(rep.Lean).Seconds())
			fmt.Fprintf(a.stdout, "jobs: host build median %.1f ms, cached build median %.1f ms (its setup median %.3f ms), %d of each\n",
				ms(benchbuilds.Median(rep.Host)), ms(benchbuilds.Median(rep.Hit)), ms(benchbuilds.Median(rep.HitSetup)), len(rep.Host))
			fmt.Fprintf(a.stdout, "a cache hit adds %+.1f ms to a job (median; the issue's bound: ≤ 50 ms), ratio %.3f\n",
				ms(rep.HitCost()), benchbuilds.Median(rep.Hit).Seconds()/benchbuilds.Median(rep.Host).Seconds())
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Jobs, "jobs", benchbuilds.DefaultJobs, "jobs of each build (cached, host)")
	cmd.Flags().IntVar(&cfg.Rounds, "rounds", benchbuilds.DefaultRounds, "cold setups and setups by hand")
	cmd.Flags().StringVar(&cfg.Python, "python", benchbuilds.DefaultPython, "the harness's interpreter (absolute)")
	return cmd
}
