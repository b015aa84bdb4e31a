package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

func (a *app) benchDispatchCmd() *cobra.Command {
	var jobs, slots int
	cmd := &cobra.Command{
		Use:   "dispatch [--jobs N] [--slots S]",
		Short: "Measure benchfleet's per-job overhead against raw JetStream, in one run",
		Long: `Runs N zero-length sim jobs through the whole fleet (submit, claim with strict
priority, events, write-once result in a file store, double ack) and the same
number of bare messages through raw JetStream (one pull consumer, fetch one,
ack), with the same number of concurrent consumers, on one embedded NATS
server. Prints both rates and their ratio, measured in the same run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if jobs < 1 || jobs > 1_000_000 {
				return usageErr("--jobs %d: want 1..1000000", jobs)
			}
			if slots < 1 || slots > 256 {
				return usageErr("--slots %d: want 1..256", slots)
			}
			return a.benchDispatch(cmd.Context(), jobs, slots)
		},
	}
	cmd.Flags().IntVar(&jobs, "jobs", 2000, "jobs (and raw messages) to dispatch")
	cmd.Flags().IntVar(&slots, "slots", 8, "concurrent slots (and raw consumers)")
	return cmd
}

func (a *app) benchDispatch(ctx context.Context, n, slots int) error {
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

	raw, err := rawJetStream(ctx, srv.ClientURL(), n, slots)
	if err != nil {
		return fmt.Errorf("raw jetstream: %w", err)
	}
	fleet, err := fleetDispatch(ctx, srv.ClientURL(), filepath.Join(dir, "store"), n, slots)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	rawRate := float64(n) / raw.Seconds()
	fleetRate := float64(n) / fleet.Seconds()
	fmt.Fprintf(a.stdout, "raw jetstream  %6d msgs  %8.2fs  %9.1f msgs/s\n", n, raw.Seconds(), rawRate)
	fmt.Fprintf(a.stdout, "benchfleet     %6d jobs  %8.2fs  %9.1f jobs/s\n", n, fleet.Seconds(), fleetRate)
	fmt.Fprintf(a.stdout, "ratio fleet/raw time %.2fx, overhead %.2f ms/job per slot\n",
		fleet.Seconds()/raw.Seconds(), (fleet-raw).Seconds()*1000*float64(slots)/float64(n))
	return nil
}

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
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
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

// fleetDispatch runs n zero-length sim jobs through submit, a worker with
// `slots` sim slots and a file store, and waits for every result.
func fleetDispatch(ctx context.Context, url, storeDir string, n, slots int) (time.Duration, error) {
	store, err := storage.NewFileBucket(storeDir)
	if err != nil {
		return 0, err
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	tc := topology.Config{}
	topo, err := topology.Ensure(ctx, js, tc)
	if err != nil {
		return 0, err
	}
	var ws []worker.Slot
	r := sim.New()
	for i := 0; i < slots; i++ {
		ws = append(ws, worker.Slot{Device: device.Device{ID: fmt.Sprintf("sim-%d", i), Pool: "sim", Runner: "sim", Chips: 1, Healthy: true}, Runner: r})
	}
	wnc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer wnc.Close()
	w, err := worker.New(worker.Config{ID: "bench", Conn: wnc, Store: store, Slots: ws, Topology: tc, IdlePoll: 50 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); <-w.Done() }()
	if err := w.Start(wctx); err != nil {
		return 0, err
	}
	var jobs []*protocol.Job
	for i := 0; i < n; i++ {
		spec := producer.JobSpec{Pool: "sim", Runner: "sim", Labels: map[string]string{"i": fmt.Sprint(i), sim.LabelDuration: "0s"},
			Benchmark: producer.BenchmarkSpec{Model: "noop", BatchSize: 1, LoopCount: 1}}
		j, err := spec.Job("dispatch", producer.SourceSpec{})
		if err != nil {
			return 0, err
		}
		jobs = append(jobs, j)
	}
	start := time.Now()
	p := &producer.Submitter{JS: js, Topo: topo}
	res, err := p.Submit(ctx, producer.Submission{Run: "dispatch", Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		return 0, err
	}
	wt := &producer.Watcher{JS: js, Manifest: res.Manifest, Store: store, Poll: 50 * time.Millisecond}
	if _, err := wt.Wait(ctx, nil); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
