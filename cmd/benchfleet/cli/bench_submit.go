package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) benchSubmitCmd() *cobra.Command {
	var jobs, rounds int
	var keep string
	cmd := &cobra.Command{
		Use:   "submit [--jobs N]",
		Short: "Measure publishing a run of N jobs against raw JetStream async publish, in one run",
		Long: `Starts an embedded nats-server with its defaults (1 MB max payload) and
measures, in the same run:

  raw jetstream  js.PublishAsync of N messages of one job's size to a
                 work-queue, file-storage stream, then PublishAsyncComplete;
  benchfleet     producer.Submitter.Submit of a matrix of N sim jobs, as
                 'benchfleet submit --store file://...' does it: validation and
                 content ids, every job published with its Nats-Msg-Id and its
                 ack checked, the run manifest (chunked) in
                 bench-runs and in the store, until Submit returns.

Each of R rounds measures both sides back to back (BENCH_JOBS, BENCH_EVENTS
and bench-runs emptied first, the raw stream made anew) and prints both rates
and their ratio (benchfleet rate / raw rate); the last line is the median
ratio of the rounds. Progress goes to stderr. No worker runs: the jobs stay
queued, and the bench checks that BENCH_JOBS holds all N of them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if jobs < 1 || jobs > protocol.MaxMatrixCells {
				return usageErr("--jobs %d: want 1..%d (a run's cell limit)", jobs, protocol.MaxMatrixCells)
			}
			if rounds < 1 || rounds > 100 {
				return usageErr("--rounds %d: want 1..100", rounds)
			}
			return a.benchSubmit(cmd.Context(), jobs, rounds, keep)
		},
	}
	cmd.Flags().IntVar(&jobs, "jobs", 10000, "jobs in the run (and raw messages)")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "rounds of both measurements; the median ratio is reported")
	cmd.Flags().StringVar(&keep, "data", "", "keep the server's data (DIR/nats) and store (DIR/store) here instead of a temporary directory, for inspection")
	return cmd
}

func (a *app) benchSubmit(ctx context.Context, n, rounds int, dataDir string) error {
	dir := dataDir
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "nats")); err == nil {
			return usageErr("--data %s: already holds a server's data (nats/); give an empty or new directory", dir)
		}
	} else {
		d, err := os.MkdirTemp("", "benchfleet-submit-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	bn, err := startBenchNATS(ctx, dir)
	if err != nil {
		return err
	}
	defer bn.close()
	nc, js, topo := bn.nc, bn.js, bn.topo
	store, err := storage.NewFileBucket(filepath.Join(dir, "store"))
	if err != nil {
		return err
	}

	defer printSteal(a.stdout, stealMeter())
	var ratios []float64
	for r := 1; r <= rounds; r++ {
		// Every round starts from empty streams, as the first does.
		for _, s := range []jetstream.Stream{topo.Jobs, topo.Events} {
			if err := s.Purge(ctx); err != nil {
				return err
			}
		}
		if err := purgeKV(ctx, js, protocol.BucketRuns); err != nil {
			return err
		}
		run := fmt.Sprintf("bench-submit-%d", r)
		buildStart := time.Now()
		jobs, err := benchJobs(run, n, 0)
		if err != nil {
			return err
		}
		build := time.Since(buildStart)
		sample := *jobs[0]
		sample.CreatedAt = time.Now().UTC()
		one, err := json.Marshal(&sample)
		if err != nil {
			return err
		}

		fmt.Fprintf(a.stderr, "round %d/%d: raw jetstream: publishing %d messages of %d bytes...\n", r, rounds, n, len(one))
		raw, err := rawPublish(ctx, nc, n, len(one))
		if err != nil {
			return fmt.Errorf("raw jetstream: %w", err)
		}
		fmt.Fprintf(a.stderr, "round %d/%d: benchfleet: submitting a run of %d jobs...\n", r, rounds, n)
		p := &producer.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Store: store, Log: a.log, Progress: benchProgress(a, n)}
		start := time.Now()
		res, err := p.Submit(ctx, producer.Submission{Run: run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs})
		if err != nil {
			return fmt.Errorf("benchfleet: %w", err)
		}
		fleet := time.Since(start)
		if res.Published != n || len(res.Manifest.Jobs) != n {
			return fmt.Errorf("benchfleet: %d jobs published, manifest of %d, want %d", res.Published, len(res.Manifest.Jobs), n)
		}
		info, err := topo.Jobs.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != uint64(n) {
			return fmt.Errorf("benchfleet: %s holds %d jobs, want %d", protocol.StreamJobs, info.State.Msgs, n)
		}
		rawRate := float64(n) / raw.Seconds()
		fleetRate := float64(n) / fleet.Seconds()
		ratios = append(ratios, fleetRate/rawRate)
		fmt.Fprintf(a.stdout, "round %d  raw jetstream  %6d msgs  %8.3fs  %9.1f msgs/s\n", r, n, raw.Seconds(), rawRate)
		fmt.Fprintf(a.stdout, "round %d  benchfleet     %6d jobs  %8.3fs  %9.1f jobs/s  (%d in %s)\n", r, n, fleet.Seconds(), fleetRate, info.State.Msgs, protocol.StreamJobs)
		fmt.Fprintf(a.stdout, "round %d  ratio benchfleet/raw rate %.3f (time %.2fx), overhead %.1f µs/job; matrix expansion %.1f µs/job (not timed)\n",
			r, fleetRate/rawRate, fleet.Seconds()/raw.Seconds(), (fleet-raw).Seconds()*1e6/float64(n), build.Seconds()*1e6/float64(n))
	}
	med, lo, hi := medianOf(ratios)
	fmt.Fprintf(a.stdout, "ratio benchfleet/raw rate %.3f (median of %d rounds; min %.3f, max %.3f)\n", med, len(ratios), lo, hi)
	return nil
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

// benchProgress prints Submit's progress to stderr about every 10% of n
// (nothing for small runs).
func benchProgress(a *app, n int) func(string, int, int) {
	if n < 5000 {
		return nil
	}
	last := map[string]int{}
	return func(stage string, done, total int) {
		if step := max(1, total/10); done == total || done-last[stage] >= step {
			last[stage] = done
			fmt.Fprintf(a.stderr, "  %s %d/%d\n", stage, done, total)
		}
	}
}

// rawPublish is the baseline: n messages of size bytes published with
// PublishAsync to a work-queue file-storage stream, then
// PublishAsyncComplete, each ack checked. Its JetStream context may have
// all n unacknowledged (nats.go's default bound of 4000 makes a publisher
// stall for 200 ms whenever the server falls behind, which on a loaded
// machine measured the stall, not the server), so the baseline is the
// server's own pace. The stream is deleted after.
func rawPublish(ctx context.Context, nc *nats.Conn, n, size int) (time.Duration, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(max(n, 4000)))
	if err != nil {
		return 0, err
	}
	stream, err := createRawStream(ctx, js)
	if err != nil {
		return 0, err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), "RAW")
	payload := make([]byte, size)
	futures := make([]jetstream.PubAckFuture, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		f, err := js.PublishAsync("raw.job", payload)
		if err != nil {
			return 0, err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	d := time.Since(start)
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, err
		}
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs != uint64(n) {
		return 0, fmt.Errorf("raw stream holds %d messages, want %d", info.State.Msgs, n)
	}
	return d, nil
}
