package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
)

// ScheduleConfig is one `benchfleet bench schedule` run: a synthetic run of
// sim jobs whose durations are drawn like a perf matrix's (many of 1-3
// minutes, a few of 20-40), scaled down, on Slots sim slots of one worker.
type ScheduleConfig struct {
	// Jobs is the number of jobs in the run (DefaultScheduleConfig: 40).
	Jobs int
	// Long is how many of them last 20-40 minutes; 0 is a tenth of Jobs
	// (at least 1).
	Long int
	// Slots is P, the sim slots that run the jobs (default 8).
	Slots int
	// Minute is what a minute of the synthetic matrix lasts (default 20 ms).
	Minute time.Duration
	// Seed draws the durations and their matrix order.
	Seed uint64
	// Dir holds the NATS data and the store (required).
	Dir string
	// Log receives the worker's logs.
	Log zerolog.Logger
}

// DefaultScheduleConfig is the bench's default run: 40 jobs on 8 slots, a
// minute lasting 20 ms.
func DefaultScheduleConfig() ScheduleConfig {
	return ScheduleConfig{Jobs: 40, Slots: 8, Minute: 20 * time.Millisecond}
}

func (c ScheduleConfig) withDefaults() ScheduleConfig {
	c.Long = cmp.Or(c.Long, max(1, c.Jobs/10))
	return c
}

// Validate names the first setting out of range by its flag (a zero is
// out of range, not a default: DefaultScheduleConfig has those).
func (c ScheduleConfig) Validate() error {
	d := c.withDefaults()
	switch {
	case c.Dir == "":
		return errors.New("schedule: Dir is required")
	case c.Jobs < 1 || c.Jobs > 2000:
		return configErr("--jobs %d: want 1 to 2000", c.Jobs)
	case d.Long < 0 || d.Long > c.Jobs:
		return configErr("--long %d: want 0 (a tenth of --jobs) to --jobs %d", c.Long, c.Jobs)
	case c.Slots < 1 || c.Slots > 256:
		return configErr("--slots %d: want 1 to 256", c.Slots)
	case c.Minute < time.Millisecond || c.Minute > time.Second:
		return configErr("--minute %s: want 1ms to 1s", c.Minute)
	}
	return nil
}

// SchedulePass is one run of the matrix in one order.
type SchedulePass struct {
	// Makespan is from the start of the submit to the last job's finish.
	Makespan time.Duration
	// Ratio is Makespan over the report's Bound.
	Ratio float64
	// Schedule is the submit's order decision.
	Schedule submit.Schedule
}

// ScheduleReport is what RunSchedule measured.
type ScheduleReport struct {
	Config ScheduleConfig // with defaults
	// Total and Longest are the jobs' synthetic durations (scaled);
	// Bound = max(Longest, Total / Slots), below which no order can go.
	Total, Longest, Bound time.Duration
	// Matrix is the first pass, in matrix order (no history yet);
	// Expected the second, ordered by the first pass's stored results
	// (compacted into the index) through the producer's Submit.
	Matrix, Expected SchedulePass
}

// String is the figures, ending with the one line a script reads.
func (r *ScheduleReport) String() string {
	c := r.Config
	mins := func(d time.Duration) string { return fmt.Sprintf("%.1f min", float64(d)/float64(c.Minute)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%d sim jobs on %d slots (seed %d): %d of 1-3 min, %d of 20-40 min; 1 min lasts %s\n",
		c.Jobs, c.Slots, c.Seed, c.Jobs-c.Long, c.Long, c.Minute)
	fmt.Fprintf(&b, "total %s, longest %s: lower bound max(longest, total/%d) = %s (%s)\n",
		mins(r.Total), mins(r.Longest), c.Slots, mins(r.Bound), r.Bound.Round(time.Millisecond))
	fmt.Fprintf(&b, "matrix order:            makespan %s = %.2fx the bound\n", r.Matrix.Makespan.Round(time.Millisecond), r.Matrix.Ratio)
	fmt.Fprintf(&b, "expected-duration order: makespan %s = %.2fx the bound (%s; history read in %s)\n",
		r.Expected.Makespan.Round(time.Millisecond), r.Expected.Ratio, r.Expected.Schedule, r.Expected.Schedule.Read.Round(100*time.Microsecond))
	fmt.Fprintf(&b, "makespan %.2fx the lower bound (matrix order %.2fx)\n", r.Expected.Ratio, r.Matrix.Ratio)
	return b.String()
}

// RunSchedule runs the matrix twice on an embedded NATS server with one
// worker of cfg.Slots sim slots and a file store in cfg.Dir: first in
// matrix order, then (its results compacted into the index) in the order
// Submit takes from that history.
func RunSchedule(ctx context.Context, cfg ScheduleConfig) (*ScheduleReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rep := &ScheduleReport{Config: cfg}
	durations := drawDurations(cfg)
	for _, d := range durations {
		rep.Total += d
		rep.Longest = max(rep.Longest, d)
	}
	rep.Bound = max(rep.Longest, rep.Total/time.Duration(cfg.Slots))
	ctx, cancel := context.WithTimeout(ctx, 20*rep.Total/time.Duration(cfg.Slots)+time.Minute)
	defer cancel()

	f, err := startFleet(ctx, cfg.Dir, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	defer f.close()
	w, err := f.startWorker(ctx, worker.Config{ID: "bench-schedule", Slots: simSlots(cfg.Slots), Log: cfg.Log})
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	defer w.Kill()
	if rep.Matrix, err = f.schedulePass(ctx, "schedule-matrix", durations, nil); err != nil {
		return nil, fmt.Errorf("schedule: matrix order: %w", err)
	}
	if _, err := index.Compact(ctx, f.store, index.CompactOptions{}); err != nil {
		return nil, fmt.Errorf("schedule: compact the first pass: %w", err)
	}
	if rep.Expected, err = f.schedulePass(ctx, "schedule-expected", durations, f.store); err != nil {
		return nil, fmt.Errorf("schedule: expected-duration order: %w", err)
	}
	rep.Matrix.Ratio = float64(rep.Matrix.Makespan) / float64(rep.Bound)
	rep.Expected.Ratio = float64(rep.Expected.Makespan) / float64(rep.Bound)
	return rep, nil
}

// drawDurations is the matrix: cfg.Long jobs of 20-40 minutes and the rest
// of 1-3, scaled by cfg.Minute, in an order drawn from cfg.Seed.
func drawDurations(cfg ScheduleConfig) []time.Duration {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5c4ed01e))
	out := make([]time.Duration, cfg.Jobs)
	for i := range out {
		lo, span := 1.0, 2.0
		if i < cfg.Long {
			lo, span = 20, 20
		}
		out[i] = time.Duration((lo + span*rng.Float64()) * float64(cfg.Minute))
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// schedulePass submits the matrix as run (ordered by history when not
// nil), waits for every result, and measures the makespan.
func (f *fleet) schedulePass(ctx context.Context, run string, durations []time.Duration, history storage.Bucket) (SchedulePass, error) {
	jobs := make([]*protocol.Job, len(durations))
	for i, d := range durations {
		spec := submit.JobSpec{Pool: "sim", Runner: "sim", Labels: map[string]string{sim.LabelDuration: d.String()},
			Benchmark: submit.BenchmarkSpec{Model: fmt.Sprintf("model-%03d", i), BatchSize: 1, LoopCount: 1}}
		j, err := spec.Job(run, submit.SourceSpec{})
		if err != nil {
			return SchedulePass{}, err
		}
		jobs[i] = j
	}
	p := &submit.Submitter{JS: f.js, Runs: f.topo.Runs, Jobs: f.topo.Jobs, Store: f.store, History: history, Log: zerolog.Nop()}
	start := time.Now()
	res, err := p.Submit(ctx, submit.Submission{Run: run, Submitter: "bench schedule", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		return SchedulePass{}, err
	}
	wt := &watch.Watcher{JS: f.js, Manifest: res.Manifest, Store: f.store}
	if _, err := wt.Wait(ctx, nil); err != nil {
		return SchedulePass{}, err
	}
	rs, _, err := index.QueryJSON(ctx, f.store, index.Filter{Run: run})
	if err != nil {
		return SchedulePass{}, err
	}
	var last time.Time
	for _, r := range rs {
		if r.Status != protocol.StatusPassed {
			return SchedulePass{}, fmt.Errorf("job %s (%s): %s", r.Job, r.Benchmark.Model, r.Status)
		}
		last = latest(last, r.FinishedAt)
	}
	if len(rs) != len(jobs) {
		return SchedulePass{}, fmt.Errorf("%d results of %d jobs", len(rs), len(jobs))
	}
	return SchedulePass{Makespan: last.Sub(start), Schedule: res.Schedule}, nil
}
