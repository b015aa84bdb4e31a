package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// Defaults of SubmitConfig, for the command line's flags.
const (
	DefaultSubmitJobs   = 10000
	DefaultSubmitRounds = 3
)

// SubmitConfig configures `bench submit`: publishing a run of Jobs jobs
// against raw JetStream async publish, in one run. No worker runs.
type SubmitConfig struct {
	// Jobs in the run (and raw messages): 1..protocol.MaxMatrixCells.
	Jobs int
	// Rounds of both measurements: 1..100.
	Rounds int
	// Dir keeps the server's data (Dir/nats) and the store (Dir/store) for
	// inspection; it must not hold a server's data yet. Default: a
	// temporary directory, removed.
	Dir string
	// Progress receives a line per side of a round and, for runs of 5000
	// jobs or more, Submit's progress. Default: none.
	Progress io.Writer
	// Log is the submitter's. Default: none.
	Log zerolog.Logger
}

// Validate fills the defaults and names the first field out of range.
func (c *SubmitConfig) Validate() error {
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	switch {
	case c.Jobs < 1 || c.Jobs > protocol.MaxMatrixCells:
		return configErr("--jobs %d: want 1..%d (a run's cell limit)", c.Jobs, protocol.MaxMatrixCells)
	case c.Rounds < 1 || c.Rounds > 100:
		return configErr("--rounds %d: want 1..100", c.Rounds)
	}
	if c.Dir != "" {
		if _, err := os.Stat(filepath.Join(c.Dir, "nats")); err == nil {
			return configErr("--data %s: already holds a server's data (nats/); give an empty or new directory", c.Dir)
		}
	}
	return nil
}

// SubmitReport is what `bench submit` measured.
type SubmitReport struct {
	Jobs   int
	Rounds []SubmitRound
	// Spread is over the rounds' ratios.
	Spread Spread
	Steal  Steal
}

// SubmitRound is one raw publish and one Submit of the same size.
type SubmitRound struct {
	// Raw is the raw publish of Jobs messages of one job's size; Fleet is
	// Submit of the run, until it returned; Build the matrix expansion
	// (not in Fleet).
	Raw, Fleet, Build  time.Duration
	RawRate, FleetRate float64 // per second
	// Ratio is FleetRate over RawRate; Overhead the fleet's extra time per
	// job.
	Ratio    float64
	Overhead time.Duration
	// Queued is how many jobs BENCH_JOBS held after the Submit.
	Queued uint64
}

// RunSubmit measures on an embedded NATS server (its defaults: 1 MB max
// payload) and a file store. Each round starts from empty streams and
// bench-runs, and checks that BENCH_JOBS holds every job of its run.
func RunSubmit(ctx context.Context, cfg SubmitConfig) (*SubmitReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "benchfleet-submit-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	f, err := startFleet(ctx, dir, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer f.close()
	steal := stealMeter()
	n := cfg.Jobs
	rep := &SubmitReport{Jobs: n}
	var ratios []float64
	for r := 1; r <= cfg.Rounds; r++ {
		for _, s := range []jetstream.Stream{f.topo.Jobs, f.topo.Events} {
			if err := s.Purge(ctx); err != nil {
				return nil, err
			}
		}
		if err := purgeKV(ctx, f.js, protocol.BucketRuns); err != nil {
			return nil, err
		}
		run := fmt.Sprintf("bench-submit-%d", r)
		buildStart := time.Now()
		jobs, err := simJobs(run, n, 0)
		if err != nil {
			return nil, err
		}
		build := time.Since(buildStart)
		sample := *jobs[0]
		sample.CreatedAt = time.Now().UTC()
		one, err := json.Marshal(&sample)
		if err != nil {
			return nil, err
		}

		fmt.Fprintf(cfg.Progress, "round %d/%d: raw jetstream: publishing %d messages of %d bytes...\n", r, cfg.Rounds, n, len(one))
		raw, err := rawPublish(ctx, f.nc, n, len(one))
		if err != nil {
			return nil, fmt.Errorf("raw jetstream: %w", err)
		}
		fmt.Fprintf(cfg.Progress, "round %d/%d: benchfleet: submitting a run of %d jobs...\n", r, cfg.Rounds, n)
		p := &submit.Submitter{JS: f.js, Runs: f.topo.Runs, Jobs: f.topo.Jobs, Store: f.store, Log: cfg.Log, Progress: submitProgress(cfg.Progress, n)}
		start := time.Now()
		res, err := p.Submit(ctx, submit.Submission{Run: run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs})
		if err != nil {
			return nil, fmt.Errorf("benchfleet: %w", err)
		}
		fleet := time.Since(start)
		if res.Published != n || len(res.Manifest.Jobs) != n {
			return nil, fmt.Errorf("benchfleet: %d jobs published, manifest of %d, want %d", res.Published, len(res.Manifest.Jobs), n)
		}
		info, err := f.topo.Jobs.Info(ctx)
		if err != nil {
			return nil, err
		}
		if info.State.Msgs != uint64(n) {
			return nil, fmt.Errorf("benchfleet: %s holds %d jobs, want %d", protocol.StreamJobs, info.State.Msgs, n)
		}
		sr := SubmitRound{Raw: raw, Fleet: fleet, Build: build, RawRate: float64(n) / raw.Seconds(), FleetRate: float64(n) / fleet.Seconds(),
			Overhead: (fleet - raw) / time.Duration(n), Queued: info.State.Msgs}
		sr.Ratio = sr.FleetRate / sr.RawRate
		rep.Rounds = append(rep.Rounds, sr)
		ratios = append(ratios, sr.Ratio)
	}
	rep.Spread = spreadOf(ratios)
	rep.Steal = steal()
	return rep, nil
}

// purgeKV empties bucket: it deletes every key (the buckets refuse
// purges and roll-ups, see topology).
func purgeKV(ctx context.Context, js jetstream.JetStream, bucket string) error {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return err
	}
	for k := range keys.Keys() {
		if err := kv.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// submitProgress writes Submit's progress to w about every 10% of n
// (nothing for small runs).
func submitProgress(w io.Writer, n int) func(string, int, int) {
	if n < 5000 {
		return nil
	}
	last := map[string]int{}
	return func(stage string, done, total int) {
		if step := max(1, total/10); done == total || done-last[stage] >= step {
			last[stage] = done
			fmt.Fprintf(w, "  %s %d/%d\n", stage, done, total)
		}
	}
}

// Print writes the report as `bench submit` prints it.
func (rep *SubmitReport) Print(w io.Writer) {
	n := rep.Jobs
	for i, r := range rep.Rounds {
		fmt.Fprintf(w, "round %d  raw jetstream  %6d msgs  %8.3fs  %9.1f msgs/s\n", i+1, n, r.Raw.Seconds(), r.RawRate)
		fmt.Fprintf(w, "round %d  benchfleet     %6d jobs  %8.3fs  %9.1f jobs/s  (%d in %s)\n", i+1, n, r.Fleet.Seconds(), r.FleetRate, r.Queued, protocol.StreamJobs)
		fmt.Fprintf(w, "round %d  ratio benchfleet/raw rate %.3f (time %.2fx), overhead %.1f µs/job; matrix expansion %.1f µs/job (not timed)\n",
			i+1, r.Ratio, r.Fleet.Seconds()/r.Raw.Seconds(), float64(r.Overhead)/1e3, float64(r.Build)/1e3/float64(n))
	}
	fmt.Fprintf(w, "ratio benchfleet/raw rate %s\n", rep.Spread.of(len(rep.Rounds)))
	rep.Steal.print(w)
}
