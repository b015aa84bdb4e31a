package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/bench"
)

func (a *app) benchDispatchCmd() *cobra.Command {
	var cfg bench.DispatchConfig
	var boxed bool
	cmd := &cobra.Command{
		Use:   "dispatch [--jobs N] [--slots S] [--job-duration D] [--rounds R] [--probes P] [--box]",
		Short: "Measure benchfleet's per-job overhead against raw JetStream, in one run",
		Long:  longHelp("bench-dispatch"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Progress = a.stderr
			if err := cfg.Validate(); err != nil {
				return benchErr(err)
			}
			if boxed {
				return a.benchBox(cmd, cfg)
			}
			rep, err := bench.RunDispatch(cmd.Context(), cfg)
			if err != nil {
				return benchErr(err)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", bench.DefaultDispatchJobs, "jobs (and raw messages) to dispatch")
	f.IntVar(&cfg.Slots, "slots", bench.DefaultDispatchSlots, "concurrent slots (and raw consumers)")
	f.DurationVar(&cfg.JobDuration, "job-duration", 0, "length of each sim job; > 0 measures the slots' utilization instead of the raw comparison")
	f.IntVar(&cfg.Rounds, "rounds", bench.DefaultDispatchRounds, "rounds of the measurement (raw and fleet back to back); the median is reported")
	f.IntVar(&cfg.Probes, "probes", bench.DefaultDispatchProbes, "jobs published one at a time to idle slots for the claim latency (0: none)")
	f.BoolVar(&boxed, "box", false, "measure the box's cost per harness job (boxed/plain, and the sandbox's start warm and cold) instead; defaults --jobs 200, --slots 2, --job-duration 50ms")
	return cmd
}

// benchBox is `bench dispatch --box`: the flags the user gave, else the
// box bench's defaults.
func (a *app) benchBox(cmd *cobra.Command, d bench.DispatchConfig) error {
	cfg := bench.BoxConfig{Rounds: d.Rounds, Log: a.benchLog(), Progress: a.stderr}
	fl := cmd.Flags()
	if fl.Changed("probes") {
		return usageErr("--probes: does not apply to --box")
	}
	if fl.Changed("jobs") {
		cfg.Jobs = d.Jobs
	}
	if fl.Changed("slots") {
		cfg.Slots = d.Slots
	}
	if fl.Changed("job-duration") {
		if d.JobDuration == 0 {
			return usageErr("--job-duration 0: --box needs jobs of at least 1ms")
		}
		cfg.JobDuration = d.JobDuration
	}
	if err := cfg.Validate(); err != nil {
		return benchErr(err)
	}
	rep, err := bench.RunBox(cmd.Context(), cfg)
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	rep.Print(a.stdout)
	return nil
}
