package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchWorkerCPUCmd() *cobra.Command {
	var cfg bench.WorkerCPUConfig
	cmd := &cobra.Command{
		Use:     "worker-cpu [--job-duration D]",
		Short:   "Measure the worker process's own CPU while one long job runs",
		Long:    longHelp("bench-worker-cpu"),
		Example: `  benchfleet bench worker-cpu --job-duration 10s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("worker-cpu: own executable: %w", err)
			}
			cfg.Exe = exe
			rep, err := bench.RunWorkerCPU(cmd.Context(), cfg)
			if err != nil {
				return benchErr(err)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	cmd.Flags().DurationVar(&cfg.JobDuration, "job-duration", bench.DefaultWorkerCPUJobDuration, "length of the sim job the worker runs while it is measured")
	return cmd
}
