package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/storage"
)

// demoMatrix is the run `benchfleet demo` submits: the real ResNet-50 in
// both data formats and an MLP, on the built-in cpu engine.
const demoMatrix = `
defaults:
  pool: cpu
  runner: cpu
  priority: high
  benchmark: {loop_count: 8, warmup_count: 2}
  limits: {timeout: 20m}
matrix:
  benchmark:
    - {model: resnet50, batch_size: 1, data_format: bfloat16}
    - {model: resnet50, batch_size: 1, data_format: float32}
    - {model: mlp, batch_size: 32, loop_count: 64, warmup_count: 8, data_format: bfloat16}
`

func (a *app) demoCmd() *cobra.Command {
	var dataDir string
	var slots string
	cmd := &cobra.Command{
		Use:   "demo [--data DIR]",
		Short: "Run a small benchmark matrix end to end on an embedded NATS and file store",
		Long: `One shot on the embedded default: an in-process NATS server (JetStream data
in DIR/nats), a file store at DIR/store, and a worker with a cpu slot. It
submits resnet50 (bfloat16 and float32) and mlp on the built-in reference
engine, shows progress, prints the results table and exits 0 when every job
passed. Results stay in DIR/store/results/v1/...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			lf, err := a.startLocal(ctx, localOptions{dataDir: dataDir, slots: slots, workDir: os.TempDir(), command: "demo"})
			if err != nil {
				return err
			}
			// The demo's run is over (or interrupted): no need to drain.
			defer lf.kill()
			fmt.Fprintf(a.stdout, "benchfleet demo: NATS at %s, results in %s\n", lf.url, storage.Redact(a.storeURL))
			m, err := producer.ParseMatrix([]byte(demoMatrix))
			if err != nil {
				return err
			}
			digest := time.Now().UTC().Format(time.RFC3339Nano)
			run := producer.RunID(producer.SourceSpec{}, digest, time.Now())
			jobs, err := m.Jobs(run)
			if err != nil {
				return err
			}
			js, err := jetstream.New(lf.nc)
			if err != nil {
				return err
			}
			tc, err := a.topologyConfig()
			if err != nil {
				return err
			}
			topo, err := topology.Ensure(ctx, js, tc)
			if err != nil {
				return err
			}
			p := &producer.Submitter{JS: js, Topo: topo, Store: lf.store, Log: a.log}
			res, err := p.Submit(ctx, producer.Submission{Run: run, Submitter: submitter(), Priority: "high", Jobs: jobs})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "run %s: %s submitted\n", run, jobCount(len(jobs)))
			return a.waitRun(ctx, &producer.Watcher{JS: js, Manifest: res.Manifest}, waitOptions{timeout: time.Hour, inProcess: true})
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "./benchfleet-data", "directory for the embedded NATS data and the file store")
	cmd.Flags().StringVar(&slots, "slots", "cpu=1", "built-in slots")
	a.topologyFlags(cmd)
	return cmd
}

func (a *app) devCmd() *cobra.Command {
	var dataDir, listen, slots, metrics, uiAddr string
	var uiActions bool
	var uiAllowHosts []string
	cmd := &cobra.Command{
		Use:   "dev [--data DIR] [--listen 127.0.0.1:4222] [--slots cpu=2,sim=8] [--metrics-listen ADDR] [--ui ADDR [--ui-actions]]",
		Short: "Run an embedded NATS, a store and a worker until interrupted, for other terminals to submit to",
		Long: `The demo's pieces, long-running: an in-process NATS server with JetStream on
--listen, the file store at DIR/store (or --store, e.g. an s3:// URL), and a
worker with the --slots given. Submit from another terminal with
  benchfleet submit --nats nats://127.0.0.1:4222 --store file://DIR/store --pool cpu --model mlp --batch-size 8 --loop-count 32 --wait
(--wait reads each job's verdict from the store).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			lf, err := a.startLocal(ctx, localOptions{dataDir: dataDir, listen: listen, slots: slots, workDir: os.TempDir(), metrics: metrics != "", command: "dev"})
			if err != nil {
				return err
			}
			defer lf.stop()
			if metrics != "" {
				stopHTTP, err := a.serveWorkerHTTP(metrics, lf.worker)
				if err != nil {
					return err
				}
				defer stopHTTP()
			}
			if uiAddr != "" {
				uctx, stopUI := context.WithCancel(context.WithoutCancel(ctx))
				defer stopUI()
				if err := a.devUI(uctx, uiAddr, uiActions, uiAllowHosts, lf.store); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stdout, "benchfleet dev: NATS at %s, store %s, slots %s\n", lf.url, storage.Redact(a.storeURL), slots)
			fmt.Fprintf(a.stdout, "submit with: benchfleet submit --nats %s --store %s --pool cpu --model mlp --batch-size 8 --loop-count 32 --wait\n", lf.url, storage.Redact(a.storeURL))
			fmt.Fprintln(a.stdout, "Ctrl-C to stop")
			<-ctx.Done()
			fmt.Fprintln(a.stdout, "stopping: draining the worker")
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "./benchfleet-data", "directory for the embedded NATS data and the file store")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:4222", "client listen address of the embedded NATS server")
	cmd.Flags().StringVar(&slots, "slots", "cpu=1,sim=4", "built-in slots pool=count[,pool=count]")
	cmd.Flags().StringVar(&metrics, "metrics-listen", "", "serve the worker's Prometheus /metrics and /healthz on this address, e.g. 127.0.0.1:9464")
	cmd.Flags().StringVar(&uiAddr, "ui", "", "serve the web dashboard (as benchfleet serve does) on this `ADDR`, e.g. 127.0.0.1:8080")
	cmd.Flags().BoolVar(&uiActions, "ui-actions", false, "allow cancel, dlq retry and fleet release from the dashboard (operator token from $BENCHFLEET_ACTIONS_TOKEN, else one is made and printed)")
	cmd.Flags().StringArrayVar(&uiAllowHosts, "ui-allow-host", nil, "the dashboard also answers this host `NAME` (repeatable; as serve --allow-host)")
	a.topologyFlags(cmd)
	return cmd
}
