package cli

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/benchbox"
)

// benchBox is `bench dispatch --box`: it runs benchbox and prints its
// report, each round's two sides and ratio, then the median.
func (a *app) benchBox(ctx context.Context, cfg benchbox.Config) error {
	// The box's warnings (a cgroup fallback) and failed jobs, not a line
	// per job.
	cfg.Log = a.log.Level(max(a.log.GetLevel(), zerolog.WarnLevel))
	cfg.Progress = a.stderr
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	defer printSteal(a.stdout, stealMeter())
	rep, err := benchbox.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	fmt.Fprintf(a.stdout, "box: boxed jobs run %s; plain jobs as the worker's own user (isolation user none), the worker as subreaper (cgroup off); both make a room per job\n", rep.Box)
	if !rep.Switched {
		fmt.Fprintln(a.stdout, "box: not root: jobs cannot switch users, so the boxed side differs from the plain one at most in how its processes are killed (a cgroup per job where the host allows one)")
	}
	for i, r := range rep.Rounds {
		for _, s := range []struct {
			name string
			side benchbox.Side
		}{{"plain", r.Plain}, {"boxed", r.Boxed}} {
			fmt.Fprintf(a.stdout, "round %d  %s  %d jobs of %s on %d slots  %7.2fs  %7.1f jobs/s  attempt mean %.2f ms\n",
				i+1, s.name, rep.Jobs, rep.JobDuration, rep.Slots, s.side.Wall.Seconds(), float64(rep.Jobs)/s.side.Wall.Seconds(), ms(s.side.Span))
		}
		fmt.Fprintf(a.stdout, "round %d  ratio boxed/plain time %.3f, box cost %.2f ms/job per slot (attempt mean %+.2f ms)\n",
			i+1, r.Ratio(), ms(rep.CostPerJob(r)), ms(r.Boxed.Span-r.Plain.Span))
	}
	fmt.Fprintf(a.stdout, "ratio boxed/plain time %.3f (median of %d rounds; min %.3f, max %.3f)\n", rep.Median, len(rep.Rounds), rep.Min, rep.Max)
	return nil
}
