package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
)

// Defaults of DispatchConfig, for the command line's flags.
const (
	DefaultDispatchJobs   = 2000
	DefaultDispatchSlots  = 8
	DefaultDispatchRounds = 3
	DefaultDispatchProbes = 50
)

// DispatchConfig configures `bench dispatch`: benchfleet's per-job overhead
// against raw JetStream, or with JobDuration the slots' utilization.
type DispatchConfig struct {
	// Jobs is how many jobs (and raw messages) each round dispatches:
	// 1..1000000.
	Jobs int
	// Slots is the worker's sim slots (and raw consumers): 1..256.
	Slots int
	// JobDuration is each sim job's length: 0 compares against raw
	// JetStream; > 0 (at most 1h) measures the slots' utilization against
	// the runner alone instead.
	JobDuration time.Duration
	// Rounds of the measurement, each side back to back: 1..100.
	Rounds int
	// Probes is how many jobs are published one at a time to idle slots
	// for the claim latency: 0 (none) .. 10000.
	Probes int
	// Progress receives a line as each side of a round starts. Default:
	// none.
	Progress io.Writer
}

// Validate fills the defaults and names the first field out of range.
func (c *DispatchConfig) Validate() error {
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	switch {
	case c.Jobs < 1 || c.Jobs > 1_000_000:
		return configErr("--jobs %d: want 1..1000000", c.Jobs)
	case c.Slots < 1 || c.Slots > 256:
		return configErr("--slots %d: want 1..256", c.Slots)
	case c.JobDuration < 0 || c.JobDuration > time.Hour:
		return configErr("--job-duration %s: want 0..1h", c.JobDuration)
	case c.Probes < 0 || c.Probes > 10000:
		return configErr("--probes %d: want 0..10000", c.Probes)
	case c.Rounds < 1 || c.Rounds > 100:
		return configErr("--rounds %d: want 1..100", c.Rounds)
	}
	return nil
}

// DispatchReport is what `bench dispatch` measured.
type DispatchReport struct {
	// The Config's values.
	Jobs, Slots int
	JobDuration time.Duration
	// Raw holds the rounds of the raw comparison (JobDuration 0).
	Raw []RawRound
	// Utilization holds the rounds of the utilization (JobDuration > 0).
	Utilization []UtilizationRound
	// Spread is over the rounds' ratios (fleet rate / raw rate) or
	// utilizations.
	Spread Spread
	// ClaimLatency is each probe's time from its publish to its attempt
	// starting on an idle slot, sorted; empty without probes.
	ClaimLatency []time.Duration
	Steal        Steal
}

// RawRound is Jobs bare messages through raw JetStream and, right after,
// Jobs zero-length jobs through the fleet.
type RawRound struct {
	// Raw is from the first publish to the last ack; Fleet from the start
	// of the submit until the waiter saw every result.
	Raw, Fleet         time.Duration
	RawRate, FleetRate float64 // per second
	// Ratio is FleetRate over RawRate.
	Ratio float64
	// Overhead is the fleet's extra time per job per slot.
	Overhead time.Duration
}

// UtilizationRound is Jobs jobs of JobDuration through the fleet and,
// right after, on the sim runner alone (no NATS, no store).
type UtilizationRound struct {
	// Last is from the start of the submit to the last result's
	// finished_at (the last runner's end); Seen until the waiter saw every
	// result; Ideal is the runner's busy time over the slots; Alone is the
	// runner alone's wall time.
	Last, Seen, Ideal, Alone time.Duration
	// Utilization is the runner's busy time over slots x Last; Overhead the
	// time per job per slot beyond the ideal. AloneUtilization and
	// AloneOverhead are the same of the runner alone.
	Utilization, AloneUtilization float64
	Overhead, AloneOverhead       time.Duration
	// Slots says where the slots' time went.
	Slots *SlotTimes
}

// RunDispatch measures on an embedded NATS server and a file store in a
// temporary directory it removes.
func RunDispatch(ctx context.Context, cfg DispatchConfig) (*DispatchReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "benchfleet-dispatch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	steal := stealMeter()
	f, err := startFleet(ctx, dir, zerolog.Nop())
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer f.close()
	// The default idle poll (1 s): an idle slot must be woken by the job's
	// arrival, not find it by polling.
	w, err := f.startWorker(ctx, worker.Config{ID: "bench", Slots: simSlots(cfg.Slots)})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer w.Stop(ctx)

	rep := &DispatchReport{Jobs: cfg.Jobs, Slots: cfg.Slots, JobDuration: cfg.JobDuration}
	n, d := cfg.Jobs, cfg.JobDuration
	var ratios []float64
	for i := 1; i <= cfg.Rounds; i++ {
		run := fmt.Sprintf("dispatch-%d", i)
		if d == 0 {
			fmt.Fprintf(cfg.Progress, "round %d/%d: raw jetstream, %d messages on %d consumers...\n", i, cfg.Rounds, n, cfg.Slots)
			raw, err := rawDispatch(ctx, f.url, n, cfg.Slots)
			if err != nil {
				return nil, fmt.Errorf("raw jetstream: %w", err)
			}
			fmt.Fprintf(cfg.Progress, "round %d/%d: benchfleet, %d jobs on %d slots...\n", i, cfg.Rounds, n, cfg.Slots)
			seen, _, _, err := f.dispatch(ctx, run, n, 0)
			if err != nil {
				return nil, fmt.Errorf("fleet: %w", err)
			}
			rr := RawRound{Raw: raw, Fleet: seen, RawRate: float64(n) / raw.Seconds(), FleetRate: float64(n) / seen.Seconds(),
				Overhead: (seen - raw) * time.Duration(cfg.Slots) / time.Duration(n)}
			rr.Ratio = rr.FleetRate / rr.RawRate
			rep.Raw = append(rep.Raw, rr)
			ratios = append(ratios, rr.Ratio)
			continue
		}
		fmt.Fprintf(cfg.Progress, "round %d/%d: benchfleet, %d jobs of %s on %d slots...\n", i, cfg.Rounds, n, d, cfg.Slots)
		seen, last, times, err := f.dispatch(ctx, run, n, d)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		alone, err := runnerAlone(ctx, n, cfg.Slots, d)
		if err != nil {
			return nil, fmt.Errorf("runner alone: %w", err)
		}
		busy := time.Duration(n) * d
		ideal := busy / time.Duration(cfg.Slots)
		util := func(wall time.Duration) float64 { return busy.Seconds() / (float64(cfg.Slots) * wall.Seconds()) }
		perJob := func(wall time.Duration) time.Duration {
			return (wall - ideal) * time.Duration(cfg.Slots) / time.Duration(n)
		}
		u := UtilizationRound{Last: last, Seen: seen, Ideal: ideal, Alone: alone, Utilization: util(last), AloneUtilization: util(alone),
			Overhead: perJob(last), AloneOverhead: perJob(alone), Slots: times}
		rep.Utilization = append(rep.Utilization, u)
		ratios = append(ratios, u.Utilization)
	}
	rep.Spread = spreadOf(ratios)
	if cfg.Probes > 0 {
		if rep.ClaimLatency, err = f.claimLatency(ctx, cfg.Probes); err != nil {
			return nil, fmt.Errorf("claim latency: %w", err)
		}
	}
	rep.Steal = steal()
	return rep, nil
}

func simDevice(id string) device.Device {
	return device.Device{ID: id, Pool: "sim", Runner: "sim", Chips: 1, Healthy: true}
}

// runnerAlone runs n sim jobs of duration d on the sim runner directly,
// slots at a time (each goroutine takes the next job as soon as its last
// one returned), and returns the wall time: the runner's own floor on this
// host at this moment.
func runnerAlone(ctx context.Context, n, slots int, d time.Duration) (time.Duration, error) {
	jobs, err := simJobs("runner-alone", n, d)
	if err != nil {
		return 0, err
	}
	r := sim.New()
	var next atomic.Int64
	errs := make(chan error, slots)
	start := time.Now()
	var wg sync.WaitGroup
	for s := 0; s < slots; s++ {
		dev := simDevice(fmt.Sprintf("alone-%d", s))
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, err := r.Run(ctx, jobs[i], dev, discard{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// dispatch submits n jobs of duration d as one run and waits for every
// result. It returns the time until the waiter saw them all, the time
// until the last result's finish (both from the start of the submit), and
// where the slots' time went.
func (f *fleet) dispatch(ctx context.Context, run string, n int, d time.Duration) (seen, last time.Duration, _ *SlotTimes, _ error) {
	jobs, err := simJobs(run, n, d)
	if err != nil {
		return 0, 0, nil, err
	}
	start := time.Now()
	res, err := f.submit(ctx, run, jobs)
	if err != nil {
		return 0, 0, nil, err
	}
	// The waiter `benchfleet wait` runs, with its default poll: it reads
	// each result as its terminal event arrives and lists the store only
	// as a fallback.
	wt := &watch.Watcher{JS: f.js, Manifest: res.Manifest, Store: f.store}
	if _, err := wt.Wait(ctx, nil); err != nil {
		return 0, 0, nil, err
	}
	seen = time.Since(start)
	rs, _, err := index.QueryJSON(ctx, f.store, index.Filter{Run: run})
	if err != nil {
		return 0, 0, nil, err
	}
	var lastAt time.Time
	for _, r := range rs {
		if r.FinishedAt.After(lastAt) {
			lastAt = r.FinishedAt
		}
	}
	return seen, lastAt.Sub(start), newSlotTimes(start, rs), nil
}

// SlotTimes says where a slot's time went, from the results' own times:
// each attempt's span (started_at, when the slot began handling the
// delivery, to finished_at, when the runner returned) and the gap on the
// same device from one finished_at to the next started_at (settling is in
// the background, so the gap is the claim of the next job).
type SlotTimes struct {
	// First is from the start of the submit to the first started_at.
	First time.Duration
	// Spans and Gaps are sorted; SpanMean and GapMean their means.
	Spans, Gaps       []time.Duration
	SpanMean, GapMean time.Duration
}

func newSlotTimes(start time.Time, rs []*protocol.Result) *SlotTimes {
	st := &SlotTimes{First: time.Duration(math.MaxInt64)}
	byDev := map[string][]*protocol.Result{}
	for _, r := range rs {
		byDev[r.Device.ID] = append(byDev[r.Device.ID], r)
		st.Spans = append(st.Spans, r.FinishedAt.Sub(r.StartedAt))
		st.First = min(st.First, r.StartedAt.Sub(start))
	}
	for _, dev := range byDev {
		slices.SortFunc(dev, func(a, b *protocol.Result) int { return a.StartedAt.Compare(b.StartedAt) })
		for i := 1; i < len(dev); i++ {
			st.Gaps = append(st.Gaps, dev[i].StartedAt.Sub(dev[i-1].FinishedAt))
		}
	}
	slices.Sort(st.Spans)
	slices.Sort(st.Gaps)
	mean := func(ds []time.Duration) time.Duration {
		var t time.Duration
		for _, d := range ds {
			t += d
		}
		return t / time.Duration(max(len(ds), 1))
	}
	st.SpanMean, st.GapMean = mean(st.Spans), mean(st.Gaps)
	return st
}

func (st *SlotTimes) String() string {
	if len(st.Gaps) == 0 {
		return "no consecutive jobs on a slot"
	}
	return fmt.Sprintf("first start %.1f ms after the submit began; attempt span mean %.2f ms (p50 %.2f, p90 %.2f); gap between jobs on a slot mean %.2f ms (p50 %.2f, p90 %.2f, p99 %.2f)",
		Ms(st.First), Ms(st.SpanMean), Ms(Quantile(st.Spans, 0.5)), Ms(Quantile(st.Spans, 0.9)),
		Ms(st.GapMean), Ms(Quantile(st.Gaps, 0.5)), Ms(Quantile(st.Gaps, 0.9)), Ms(Quantile(st.Gaps, 0.99)))
}

// claimLatency publishes probes jobs one at a time, each once the slots
// are idle, and returns how long each took from its publish to its
// attempt starting on a slot (the result's started_at), sorted.
func (f *fleet) claimLatency(ctx context.Context, probes int) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < probes; i++ {
		jobs, err := simJobs(fmt.Sprintf("claim-latency-%d", i), 1, 0)
		if err != nil {
			return nil, err
		}
		j := jobs[0]
		// Give the slots time to go idle (their fetch found nothing).
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		if _, err := f.submit(ctx, j.Run, jobs); err != nil {
			return nil, err
		}
		key := storage.ResultKey(j.CreatedAt, j.Run, j.ID)
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := storage.ReadResult(ctx, f.store, key)
			if err == nil {
				out = append(out, r.StartedAt.Sub(start))
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("job %s: no result after 30s", j.ID)
			}
			time.Sleep(time.Millisecond)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Print writes the report as `bench dispatch` prints it: each round, the
// median of the rounds, the claim latency and the steal.
func (rep *DispatchReport) Print(w io.Writer) {
	n := rep.Jobs
	for i, r := range rep.Raw {
		fmt.Fprintf(w, "round %d  raw jetstream  %6d msgs  %8.2fs  %9.1f msgs/s\n", i+1, n, r.Raw.Seconds(), r.RawRate)
		fmt.Fprintf(w, "round %d  benchfleet     %6d jobs  %8.2fs  %9.1f jobs/s\n", i+1, n, r.Fleet.Seconds(), r.FleetRate)
		fmt.Fprintf(w, "round %d  ratio fleet/raw rate %.3f (time %.2fx), overhead %.2f ms/job per slot\n",
			i+1, r.Ratio, r.Fleet.Seconds()/r.Raw.Seconds(), Ms(r.Overhead))
	}
	for i, r := range rep.Utilization {
		fmt.Fprintf(w, "round %d  benchfleet %d jobs of %s on %d slots: %.2fs to the last runner's end, %.2fs to every result seen (ideal %.2fs); runner alone %.2fs (no NATS, no store)\n",
			i+1, n, rep.JobDuration, rep.Slots, r.Last.Seconds(), r.Seen.Seconds(), r.Ideal.Seconds(), r.Alone.Seconds())
		fmt.Fprintf(w, "round %d  utilization %.3f (runner busy time / slots x wall to the last finished_at), overhead %.2f ms/job per slot; runner alone %.3f (%.2f ms/job)\n",
			i+1, r.Utilization, Ms(r.Overhead), r.AloneUtilization, Ms(r.AloneOverhead))
		fmt.Fprintf(w, "round %d  slot times  %s\n", i+1, r.Slots)
	}
	what := "ratio fleet/raw rate"
	if rep.JobDuration > 0 {
		what = "utilization"
	}
	fmt.Fprintf(w, "%s %s\n", what, rep.Spread.of(len(rep.Raw)+len(rep.Utilization)))
	if lat := rep.ClaimLatency; len(lat) > 0 {
		fmt.Fprintf(w, "claim latency (idle slots, %d jobs one at a time): p50 %.2f ms  p99 %.2f ms  max %.2f ms\n",
			len(lat), Ms(Quantile(lat, 0.5)), Ms(Quantile(lat, 0.99)), Ms(lat[len(lat)-1]))
	}
	rep.Steal.print(w)
}
