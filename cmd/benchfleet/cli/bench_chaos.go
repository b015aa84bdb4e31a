package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/chaos"
)

type chaosFlags struct {
	jobs, workers, slots, kills int
	jobDuration, ackWait        time.Duration
	maxDeliver                  int
	timeout                     time.Duration
	seed                        uint64
	data                        string
	keep                        bool
}

func (a *app) benchChaosCmd() *cobra.Command {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos [--jobs N] [--workers W] [--slots-per-worker S] [--kills K] [--job-duration D] [--ack-wait D]",
		Short: "Kill worker processes with SIGKILL mid-run and check that no job is lost or recorded twice",
		Long: `Prove the delivery contract (at-least-once delivery, exactly-once results)
with real processes: start an embedded NATS server and a file store, start W
worker processes (this same binary, "benchfleet worker", with S sim slots
each), submit N sim jobs, SIGKILL a random busy worker K times at random
moments (restarting it each time), and wait until every job has a result or
a dead letter. Then print one line:

  jobs N results R lost L duplicates D redelivered X

lost: jobs with neither a result nor a dead letter. duplicates: results
written more than once (every successful write is witnessed by the writer's
terminal event and its "job finished" log line; more than one writing
attempt per job is a duplicate). redelivered: results of attempt > 1.
Details (kills, dead letters, duplicate deliveries caught) go to stderr.

Exit 0 only when lost and duplicates are both 0.`,
		Example: `  benchfleet bench chaos --jobs 500 --workers 3 --slots-per-worker 4 --kills 8`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runChaos(cmd.Context(), &f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.jobs, "jobs", 200, "sim jobs to submit")
	fl.IntVar(&f.workers, "workers", 3, "worker processes")
	fl.IntVar(&f.slots, "slots-per-worker", 4, "sim slots per worker")
	fl.IntVar(&f.kills, "kills", 3, "SIGKILLs of random busy workers during the run (each is restarted)")
	fl.DurationVar(&f.jobDuration, "job-duration", 500*time.Millisecond, "sim duration of one job")
	fl.DurationVar(&f.ackWait, "ack-wait", 2*time.Second, "ack wait of the queue: a killed worker's jobs come back after this")
	fl.IntVar(&f.maxDeliver, "max-deliver", 4, "deliveries of a job before it is dead-lettered")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up waiting after this long (default: from the job count, kills and ack wait)")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed for kill times and victims (default: from the clock)")
	fl.StringVar(&f.data, "data", "", "directory for NATS data, the store and worker logs (default a temp dir, removed after a clean run)")
	fl.BoolVar(&f.keep, "keep", false, "keep the data directory after a clean run")
	return cmd
}

func (a *app) runChaos(ctx context.Context, f *chaosFlags) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("chaos: own executable: %w", err)
	}
	dir := f.data
	if dir == "" {
		if dir, err = os.MkdirTemp("", "benchfleet-chaos-"); err != nil {
			return fmt.Errorf("chaos: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErr("--data %s: %v", dir, err)
	}
	seed := f.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	cfg := chaos.Config{Jobs: f.jobs, Workers: f.workers, Slots: f.slots, Kills: f.kills, JobDuration: f.jobDuration,
		AckWait: f.ackWait, MaxDeliver: f.maxDeliver, Timeout: f.timeout, Seed: seed, Dir: dir, Exe: exe, Log: a.log}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	rep, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(a.stderr, "chaos: data kept in %s\n", dir)
		return err
	}
	fmt.Fprintf(a.stdout, "jobs %d results %d lost %d duplicates %d redelivered %d\n",
		rep.Jobs, rep.Results, rep.Lost, rep.Duplicates, rep.Redelivered)
	fmt.Fprintf(a.stderr, "chaos: seed %d; %d kills, %d unexpected worker exits; %d dead letters; %d duplicate deliveries caught (result already recorded); %s\n",
		seed, rep.Kills, rep.UnexpectedExits, rep.Dead, rep.Caught, rep.Elapsed.Round(10*time.Millisecond))
	for _, job := range rep.LostJobs {
		fmt.Fprintf(a.stderr, "chaos: lost job %s\n", job)
	}
	for _, d := range rep.DupJobs {
		fmt.Fprintf(a.stderr, "chaos: duplicate result for %s\n", d)
	}
	if rep.Lost > 0 || rep.Duplicates > 0 {
		fmt.Fprintf(a.stderr, "chaos: data kept in %s\n", dir)
		return exitCode(ExitFailed)
	}
	if f.data == "" && !f.keep {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(a.stderr, "chaos: data in %s\n", dir)
	}
	return nil
}
