package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchCmd() *cobra.Command {
	var cpuProfile string
	var stopProfile func()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure benchfleet itself: dispatch, submit, worker-cpu, query, chaos, builds, schedule, gate",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cpuProfile == "" {
				return nil
			}
			f, err := os.Create(cpuProfile)
			if err != nil {
				return usageErr("--cpuprofile: %v", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if stopProfile != nil {
				stopProfile()
			}
		},
	}
	cmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark here (go tool pprof)")
	cmd.AddCommand(
		a.benchDispatchCmd(),
		a.benchWorkerCPUCmd(),
		a.benchSubmitCmd(),
		a.benchQueryCmd(),
		a.benchChaosCmd(),
		a.benchBuildsCmd(),
		a.benchScheduleCmd(),
		a.benchGateCmd(),
	)
	return cmd
}

// benchErr is err of a bench, a usage error (exit 64) where the bench
// refused its config.
func benchErr(err error) error {
	var ce *bench.ConfigError
	if errors.As(err, &ce) {
		return usageErr("%v", err)
	}
	return err
}

// benchLog is the log a bench's components get: warnings and failed jobs,
// not a line per job.
func (a *app) benchLog() zerolog.Logger { return a.log.Level(max(a.log.GetLevel(), zerolog.WarnLevel)) }
