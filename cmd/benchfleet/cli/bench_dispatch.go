package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/benchbox"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

func (a *app) benchDispatchCmd() *cobra.Command {
	var jobs, slots, probes, rounds int
	var jobDuration time.Duration
	var boxed bool
	cmd := &cobra.Command{
		Use:   "dispatch [--jobs N] [--slots S] [--job-duration D] [--rounds R] [--probes P] [--box]",
		Short: "Measure benchfleet's per-job overhead against raw JetStream, in one run",
		Long: `Runs N zero-length sim jobs through the whole fleet (submit, claim with strict
priority, events, write-once result in a file store, double ack) and the same
number of bare messages through raw JetStream (one pull consumer, fetch one,
double ack), with the same number of concurrent consumers, on one embedded
NATS server. Prints both rates and their ratio, measured in the same run.
It does so R times (--rounds), raw then fleet back to back each time, and
prints the median ratio with the rounds' minimum and maximum: on a shared
VM the host's share of the CPU drifts within seconds, and a pair measured
together compares like with like. Progress goes to stderr.

Then, with every slot idle, it publishes P jobs one at a time and prints the
claim latency (publish to the attempt starting on a slot) p50 and p99.

With --job-duration D (e.g. 50ms) the jobs last D each and the bench prints
the slots' utilization instead of the raw comparison: the runner's busy time
(N x D) over slots x the wall time from the start of the submit to the last
result's finished_at. finished_at is when the runner returned: a slot
records its last job (result write, terminal event, ack) in the background
while it runs the next one, so the metric measures how busy the devices
were, not when the last result was durable; that time (the waiter seeing
every result) is printed beside it. In the same run, the same jobs run on
the sim runner alone (one goroutine per slot, back to back, no NATS, no
store), which shows how much of the gap is the host's (late timers on a
loaded machine) and not benchfleet's; the last line is the median
utilization of the rounds.

With --box it measures the box harness jobs run in (device/box: the job
user, nobody under root, and a cgroup per job) instead: N jobs (default
200) on S forge harness slots (default 2), whose harness is a minimal
python3 script with a timed loop of D (default 50ms), run plain (isolation
user none, cgroup off) and then boxed (the default user, cgroup auto),
back to back each round. It prints each side's wall time and jobs/s, the
ratio boxed/plain of the wall times, and their median over the rounds.
Both sides make a room per job, so the ratio is the cost of the user
switch and the cgroup; not root, no user switch is possible.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if jobs < 1 || jobs > 1_000_000 {
				return usageErr("--jobs %d: want 1..1000000", jobs)
			}
			if slots < 1 || slots > 256 {
				return usageErr("--slots %d: want 1..256", slots)
			}
			if jobDuration < 0 || jobDuration > time.Hour {
				return usageErr("--job-duration %s: want 0..1h", jobDuration)
			}
			if probes < 0 || probes > 10000 {
				return usageErr("--probes %d: want 0..10000", probes)
			}
			if rounds < 1 || rounds > 100 {
				return usageErr("--rounds %d: want 1..100", rounds)
			}
			if boxed {
				if cmd.Flags().Changed("probes") {
					return usageErr("--probes: does not apply to --box")
				}
				cfg := benchbox.Config{Rounds: rounds}
				if cmd.Flags().Changed("jobs") {
					cfg.Jobs = jobs
				}
				if cmd.Flags().Changed("slots") {
					cfg.Slots = slots
				}
				if cmd.Flags().Changed("job-duration") {
					if jobDuration == 0 {
						return usageErr("--job-duration 0: --box needs jobs of at least 1ms")
					}
					cfg.JobDuration = jobDuration
				}
				return a.benchBox(cmd.Context(), cfg)
			}
			return a.benchDispatch(cmd.Context(), jobs, slots, jobDuration, probes, rounds)
		},
	}
	cmd.Flags().IntVar(&jobs, "jobs", 2000, "jobs (and raw messages) to dispatch")
	cmd.Flags().IntVar(&slots, "slots", 8, "concurrent slots (and raw consumers)")
	cmd.Flags().DurationVar(&jobDuration, "job-duration", 0, "length of each sim job; > 0 measures the slots' utilization instead of the raw comparison")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "rounds of the measurement (raw and fleet back to back); the median is reported")
	cmd.Flags().IntVar(&probes, "probes", 50, "jobs published one at a time to idle slots for the claim latency (0: none)")
	cmd.Flags().BoolVar(&boxed, "box", false, "measure the box's cost per harness job (boxed/plain) instead; defaults --jobs 200, --slots 2, --job-duration 50ms")
	return cmd
}

func (a *app) benchDispatch(ctx context.Context, n, slots int, jobDuration time.Duration, probes, rounds int) error {
	dir, err := os.MkdirTemp("", "benchfleet-dispatch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		return err
	}
	defer srv.Shutdown()

	defer printSteal(a.stdout, stealMeter())
	fl, err := startBenchFleet(ctx, srv.ClientURL(), filepath.Join(dir, "store"), slots)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer fl.stop()
	// Each round measures both sides back to back: the host's share of the
	// CPU drifts within seconds (a loaded VM's steal climbs), so a pair
	// measured together compares like with like, and the median of the
	// rounds' ratios is the figure.
	var ratios []float64
	for r := 1; r <= rounds; r++ {
		round := func() (float64, error) { return a.rawRound(ctx, srv.ClientURL(), fl, r, rounds, n, slots) }
		if jobDuration > 0 {
			round = func() (float64, error) { return a.utilizationRound(ctx, fl, r, rounds, n, slots, jobDuration) }
		}
		ratio, err := round()
		if err != nil {
			return err
		}
		ratios = append(ratios, ratio)
	}
	med, lo, hi := medianOf(ratios)
	if jobDuration > 0 {
		fmt.Fprintf(a.stdout, "utilization %.3f (median of %d rounds; min %.3f, max %.3f)\n", med, rounds, lo, hi)
	} else {
		fmt.Fprintf(a.stdout, "ratio fleet/raw rate %.3f (median of %d rounds; min %.3f, max %.3f)\n", med, rounds, lo, hi)
	}
	if probes > 0 {
		lat, err := fl.claimLatency(ctx, probes)
		if err != nil {
			return fmt.Errorf("claim latency: %w", err)
		}
		fmt.Fprintf(a.stdout, "claim latency (idle slots, %d jobs one at a time): p50 %.2f ms  p99 %.2f ms  max %.2f ms\n",
			len(lat), ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), ms(lat[len(lat)-1]))
	}
	return nil
}

// rawRound runs one round of n bare messages through raw JetStream and,
// right after, n zero-length jobs through the fleet; it prints both rates
// and returns the fleet's rate over raw's.
func (a *app) rawRound(ctx context.Context, url string, fl *benchFleet, r, rounds, n, slots int) (float64, error) {
	fmt.Fprintf(a.stderr, "round %d/%d: raw jetstream, %d messages on %d consumers...\n", r, rounds, n, slots)
	raw, err := rawJetStream(ctx, url, n, slots)
	if err != nil {
		return 0, fmt.Errorf("raw jetstream: %w", err)
	}
	fmt.Fprintf(a.stderr, "round %d/%d: benchfleet, %d jobs on %d slots...\n", r, rounds, n, slots)
	fleet, _, _, err := fl.dispatchResults(ctx, fmt.Sprintf("dispatch-%d", r), n, 0)
	if err != nil {
		return 0, fmt.Errorf("fleet: %w", err)
	}
	rawRate := float64(n) / raw.Seconds()
	fleetRate := float64(n) / fleet.Seconds()
	fmt.Fprintf(a.stdout, "round %d  raw jetstream  %6d msgs  %8.2fs  %9.1f msgs/s\n", r, n, raw.Seconds(), rawRate)
	fmt.Fprintf(a.stdout, "round %d  benchfleet     %6d jobs  %8.2fs  %9.1f jobs/s\n", r, n, fleet.Seconds(), fleetRate)
	fmt.Fprintf(a.stdout, "round %d  ratio fleet/raw rate %.3f (time %.2fx), overhead %.2f ms/job per slot\n",
		r, fleetRate/rawRate, fleet.Seconds()/raw.Seconds(), (fleet-raw).Seconds()*1000*float64(slots)/float64(n))
	return fleetRate / rawRate, nil
}

// utilizationRound runs one round of n jobs of duration d through the
// fleet and, right after, on the runner alone; it prints both and returns
// the fleet's utilization.
func (a *app) utilizationRound(ctx context.Context, fl *benchFleet, r, rounds, n, slots int, d time.Duration) (float64, error) {
	fmt.Fprintf(a.stderr, "round %d/%d: benchfleet, %d jobs of %s on %d slots...\n", r, rounds, n, d, slots)
	fleet, last, times, err := fl.dispatchResults(ctx, fmt.Sprintf("dispatch-%d", r), n, d)
	if err != nil {
		return 0, fmt.Errorf("fleet: %w", err)
	}
	alone, err := runnerAlone(ctx, n, slots, d)
	if err != nil {
		return 0, fmt.Errorf("runner alone: %w", err)
	}
	busy := time.Duration(n) * d
	util := func(wall time.Duration) float64 { return busy.Seconds() / (float64(slots) * wall.Seconds()) }
	perJob := func(wall time.Duration) float64 {
		return (wall - busy/time.Duration(slots)).Seconds() * 1000 * float64(slots) / float64(n)
	}
	fmt.Fprintf(a.stdout, "round %d  benchfleet %d jobs of %s on %d slots: %.2fs to the last runner's end, %.2fs to every result seen (ideal %.2fs); runner alone %.2fs (no NATS, no store)\n",
		r, n, d, slots, last.Seconds(), fleet.Seconds(), (busy / time.Duration(slots)).Seconds(), alone.Seconds())
	fmt.Fprintf(a.stdout, "round %d  utilization %.3f (runner busy time / slots x wall to the last finished_at), overhead %.2f ms/job per slot; runner alone %.3f (%.2f ms/job)\n",
		r, util(last), perJob(last), util(alone), perJob(alone))
	fmt.Fprintf(a.stdout, "round %d  slot times  %s\n", r, times)
	return util(last), nil
}

// medianOf returns median(xs) and the minimum and maximum of xs (not empty).
func medianOf(xs []float64) (med, lo, hi float64) {
	return median(xs), slices.Min(xs), slices.Max(xs)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile of sorted ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// runnerAlone runs n sim jobs of duration d on the sim runner directly,
// slots at a time (each goroutine takes the next job as soon as its last
// one returned), and returns the wall time: the runner's own floor on this
// host at this moment.
func runnerAlone(ctx context.Context, n, slots int, d time.Duration) (time.Duration, error) {
	jobs, err := benchJobs("runner-alone", n, d)
	if err != nil {
		return 0, err
	}
	r := sim.New()
	var next atomic.Int64
	errs := make(chan error, slots)
	start := time.Now()
	var wg sync.WaitGroup
	for s := 0; s < slots; s++ {
		dev := device.Device{ID: fmt.Sprintf("alone-%d", s), Pool: "sim", Runner: "sim", Chips: 1, Healthy: true}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, err := r.Run(ctx, jobs[i], dev, nopRecorder{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

type nopRecorder struct{}

func (nopRecorder) Phase(string)            {}
func (nopRecorder) Log(string)              {}
func (nopRecorder) Artifact(string, string) {}

// rawJetStream publishes n messages to a work-queue stream and consumes
// them with `slots` goroutines each fetching one and acking it.
func rawJetStream(ctx context.Context, url string, n, slots int) (time.Duration, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	stream, err := createRawStream(ctx, js)
	if err != nil {
		return 0, err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	payload := make([]byte, 600) // about a job's size
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync("raw.job", payload); err != nil {
			return 0, err
		}
	}
	<-js.PublishAsyncComplete()
	var done atomic.Int64
	var wg sync.WaitGroup
	for s := 0; s < slots; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(n) {
				batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
				if err != nil {
					return
				}
				for m := range batch.Messages() {
					if m.DoubleAck(ctx) == nil {
						done.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), nil
}

// benchFleet is a worker with sim slots and a file store on one server.
type benchFleet struct {
	store  *storage.FileBucket
	js     jetstream.JetStream
	topo   *topology.Handles
	nc     *nats.Conn
	wnc    *nats.Conn
	w      *worker.Worker
	cancel context.CancelFunc
}

func startBenchFleet(ctx context.Context, url, storeDir string, slots int) (*benchFleet, error) {
	f := &benchFleet{}
	var err error
	if f.store, err = storage.NewFileBucket(storeDir); err != nil {
		return nil, err
	}
	if f.nc, err = nats.Connect(url); err != nil {
		return nil, err
	}
	if f.js, err = jetstream.New(f.nc); err != nil {
		f.nc.Close()
		return nil, err
	}
	tc := topology.Config{}
	if f.topo, err = topology.Ensure(ctx, f.js, tc); err != nil {
		f.nc.Close()
		return nil, err
	}
	var ws []worker.Slot
	r := sim.New()
	for i := 0; i < slots; i++ {
		ws = append(ws, worker.Slot{Device: device.Device{ID: fmt.Sprintf("sim-%d", i), Pool: "sim", Runner: "sim", Chips: 1, Healthy: true}, Runner: r})
	}
	if f.wnc, err = nats.Connect(url); err != nil {
		f.nc.Close()
		return nil, err
	}
	// The default idle poll (1 s): an idle slot must be woken by the
	// job's arrival, not find it by polling.
	f.w, err = worker.New(worker.Config{ID: "bench", Conn: f.wnc, Store: f.store, Slots: ws, AckWait: tc.AckWait})
	if err != nil {
		f.nc.Close()
		f.wnc.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	if err := f.w.Start(wctx); err != nil {
		cancel()
		f.nc.Close()
		f.wnc.Close()
		return nil, err
	}
	return f, nil
}

func (f *benchFleet) stop() {
	f.cancel()
	<-f.w.Done()
	f.wnc.Close()
	f.nc.Close()
}

func benchJobs(run string, n int, d time.Duration) ([]*protocol.Job, error) {
	var jobs []*protocol.Job
	for i := 0; i < n; i++ {
		spec := producer.JobSpec{Pool: "sim", Runner: "sim", Labels: map[string]string{"i": fmt.Sprint(i), sim.LabelDuration: d.String()},
			Benchmark: producer.BenchmarkSpec{Model: "noop", BatchSize: 1, LoopCount: 1}}
		j, err := spec.Job(run, producer.SourceSpec{})
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// dispatchResults submits n jobs of duration d as one run and waits for
// every result. It returns the time until the waiter saw them all, the time
// until the last result's finish (both from the start of the submit), and
// where the slots' time went.
func (f *benchFleet) dispatchResults(ctx context.Context, run string, n int, d time.Duration) (time.Duration, time.Duration, *slotTimes, error) {
	jobs, err := benchJobs(run, n, d)
	if err != nil {
		return 0, 0, nil, err
	}
	start := time.Now()
	p := &producer.Submitter{JS: f.js, Runs: f.topo.Runs, Jobs: f.topo.Jobs}
	res, err := p.Submit(ctx, producer.Submission{Run: run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		return 0, 0, nil, err
	}
	// The waiter `benchfleet wait` runs, with its default poll: it reads each
	// result as its terminal event arrives and lists the store only as a
	// fallback (a 50 ms poll listed the run's folder 20 times a second, on
	// the same 2 cores as the fleet it measures).
	wt := &producer.Watcher{JS: f.js, Manifest: res.Manifest, Store: f.store}
	if _, err := wt.Wait(ctx, nil); err != nil {
		return 0, 0, nil, err
	}
	seen := time.Since(start)
	rs, _, err := storage.QueryJSON(ctx, f.store, storage.Filter{Run: run})
	if err != nil {
		return 0, 0, nil, err
	}
	var last time.Time
	for _, r := range rs {
		if r.FinishedAt.After(last) {
			last = r.FinishedAt
		}
	}
	return seen, last.Sub(start), newSlotTimes(start, rs), nil
}

// slotTimes says where a slot's time went, from the results' own times:
// each attempt's span (started_at, when the slot began handling the
// delivery, to finished_at, when the runner returned) and the gap on the
// same device from one finished_at to the next started_at (settling is in
// the background, so the gap is the claim of the next job).
type slotTimes struct {
	first        time.Duration // submit start to the first started_at
	spans, gaps  []time.Duration
	spanM, gapsM time.Duration // means
}

func newSlotTimes(start time.Time, rs []*protocol.Result) *slotTimes {
	st := &slotTimes{first: time.Duration(math.MaxInt64)}
	byDev := map[string][]*protocol.Result{}
	for _, r := range rs {
		byDev[r.Device.ID] = append(byDev[r.Device.ID], r)
		st.spans = append(st.spans, r.FinishedAt.Sub(r.StartedAt))
		st.first = min(st.first, r.StartedAt.Sub(start))
	}
	for _, dev := range byDev {
		slices.SortFunc(dev, func(a, b *protocol.Result) int { return a.StartedAt.Compare(b.StartedAt) })
		for i := 1; i < len(dev); i++ {
			st.gaps = append(st.gaps, dev[i].StartedAt.Sub(dev[i-1].FinishedAt))
		}
	}
	slices.Sort(st.spans)
	slices.Sort(st.gaps)
	mean := func(ds []time.Duration) time.Duration {
		var t time.Duration
		for _, d := range ds {
			t += d
		}
		return t / time.Duration(max(len(ds), 1))
	}
	st.spanM, st.gapsM = mean(st.spans), mean(st.gaps)
	return st
}

func (st *slotTimes) String() string {
	if len(st.gaps) == 0 {
		return "no consecutive jobs on a slot"
	}
	return fmt.Sprintf("first start %.1f ms after the submit began; attempt span mean %.2f ms (p50 %.2f, p90 %.2f); gap between jobs on a slot mean %.2f ms (p50 %.2f, p90 %.2f, p99 %.2f)",
		ms(st.first), ms(st.spanM), ms(quantile(st.spans, 0.5)), ms(quantile(st.spans, 0.9)),
		ms(st.gapsM), ms(quantile(st.gaps, 0.5)), ms(quantile(st.gaps, 0.9)), ms(quantile(st.gaps, 0.99)))
}

// claimLatency publishes probes jobs one at a time, each once the slots
// are idle, and returns how long each took from its publish to its
// attempt starting on a slot (the result's started_at), sorted.
func (f *benchFleet) claimLatency(ctx context.Context, probes int) ([]time.Duration, error) {
	p := &producer.Submitter{JS: f.js, Runs: f.topo.Runs, Jobs: f.topo.Jobs}
	var out []time.Duration
	for i := 0; i < probes; i++ {
		jobs, err := benchJobs(fmt.Sprintf("claim-latency-%d", i), 1, 0)
		if err != nil {
			return nil, err
		}
		j := jobs[0]
		// Give the slots time to go idle (their fetch found nothing).
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		if _, err := p.Submit(ctx, producer.Submission{Run: j.Run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: []*protocol.Job{j}}); err != nil {
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

// createRawStream is the raw baselines' stream: a work queue on file
// storage, as BENCH_JOBS is.
func createRawStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	return js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
}
