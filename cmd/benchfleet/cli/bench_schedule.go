package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchScheduleCmd() *cobra.Command {
	cfg := bench.DefaultScheduleConfig()
	cmd := &cobra.Command{
		Use:   "schedule [--jobs N] [--long L] [--slots P] [--minute D] [--seed S]",
		Short: "Measure a run's makespan in matrix order and in expected-duration order against the lower bound",
		Long:  longHelp("bench-schedule"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log = a.log
			dir, err := os.MkdirTemp("", "benchfleet-schedule-")
			if err != nil {
				return fmt.Errorf("schedule: %w", err)
			}
			defer os.RemoveAll(dir)
			cfg.Dir = dir
			if cfg.Seed == 0 {
				cfg.Seed = uint64(time.Now().UnixNano())
			}
			if err := cfg.Validate(); err != nil {
				return benchErr(err)
			}
			rep, err := bench.RunSchedule(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			fmt.Fprint(a.stdout, rep)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs in the run")
	fl.IntVar(&cfg.Long, "long", 0, "jobs of 20-40 minutes (default a tenth of --jobs)")
	fl.IntVar(&cfg.Slots, "slots", cfg.Slots, "sim slots (P) that run them")
	fl.DurationVar(&cfg.Minute, "minute", cfg.Minute, "what one minute of the matrix lasts")
	fl.Uint64Var(&cfg.Seed, "seed", 0, "seed of the durations and their matrix order (default: from the clock)")
	return cmd
}
