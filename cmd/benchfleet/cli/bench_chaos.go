package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchChaosCmd() *cobra.Command {
	var cfg bench.ChaosConfig
	var keep bool
	cmd := &cobra.Command{
		Use:     "chaos [--jobs N] [--workers W] [--slots-per-worker S] [--kills K] [--job-duration D] [--ack-wait D]",
		Short:   "Kill worker processes with SIGKILL mid-run and check that no job is lost or recorded twice",
		Long:    longHelp("bench-chaos"),
		Example: `  benchfleet bench chaos --jobs 500 --workers 3 --slots-per-worker 4 --kills 8`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runChaos(cmd.Context(), cfg, keep) },
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", 200, "sim jobs to submit")
	fl.IntVar(&cfg.Workers, "workers", 3, "worker processes")
	fl.IntVar(&cfg.Slots, "slots-per-worker", 4, "sim slots per worker")
	fl.IntVar(&cfg.Kills, "kills", 3, "SIGKILLs of random busy workers during the run (each is restarted)")
	fl.DurationVar(&cfg.JobDuration, "job-duration", 500*time.Millisecond, "sim duration of one job")
	fl.DurationVar(&cfg.AckWait, "ack-wait", 2*time.Second, "ack wait of the queue: a killed worker's jobs come back after this")
	fl.IntVar(&cfg.MaxDeliver, "max-deliver", 4, "deliveries of a job before it is dead-lettered")
	fl.DurationVar(&cfg.Timeout, "timeout", 0, "give up waiting after this long (default: from the job count, kills and ack wait)")
	fl.Uint64Var(&cfg.Seed, "seed", 0, "random seed for kill times and victims (default: from the clock)")
	fl.StringVar(&cfg.Dir, "data", "", "directory for NATS data, the store and worker logs (default a temp dir, removed after a clean run)")
	fl.BoolVar(&keep, "keep", false, "keep the data directory after a clean run")
	return cmd
}

func (a *app) runChaos(ctx context.Context, cfg bench.ChaosConfig, keep bool) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("chaos: own executable: %w", err)
	}
	temp := cfg.Dir == ""
	if temp {
		if cfg.Dir, err = os.MkdirTemp("", "benchfleet-chaos-"); err != nil {
			return fmt.Errorf("chaos: %w", err)
		}
	} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return usageErr("--data %s: %v", cfg.Dir, err)
	}
	cfg.Exe, cfg.Log = exe, a.log
	if err := cfg.Validate(); err != nil {
		return benchErr(err)
	}
	rep, err := bench.RunChaos(ctx, cfg)
	if err != nil {
		fmt.Fprintf(a.stderr, "chaos: data kept in %s\n", cfg.Dir)
		return err
	}
	rep.Print(a.stdout, a.stderr)
	switch {
	case !rep.OK():
		fmt.Fprintf(a.stderr, "chaos: data kept in %s\n", cfg.Dir)
		return exitCode(ExitFailed)
	case temp && !keep:
		os.RemoveAll(cfg.Dir)
	default:
		fmt.Fprintf(a.stderr, "chaos: data in %s\n", cfg.Dir)
	}
	return nil
}
