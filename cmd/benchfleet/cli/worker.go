package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/worker/configfile"
	"github.com/benchfleet/benchfleet/worker/process"
)

func (a *app) workerCmd() *cobra.Command {
	// The flags fill the process's options; the config file (UseFile)
	// fills what they leave empty.
	o := process.Options{CheckID: true, Out: a.stderr}
	cmd := &cobra.Command{
		Use:   "worker [--config FILE] [--slots cpu=2,sim=8] [--id NAME] [--spool DIR] [--metrics-listen ADDR] [--notify URL]",
		Short: "Serve this host's devices: claim jobs, run them, store results",
		Long:  longHelp("worker") + runnerHelp(),
		Example: `  benchfleet worker --nats nats://nats-1:4222 --store s3://bench/farm --config /etc/benchfleet/worker.yaml
  benchfleet worker --nats nats://127.0.0.1:4222 --store file:///tmp/bf/store --slots cpu=1,sim=4   # beside "benchfleet dev --data /tmp/bf"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runWorker(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.ConfigPath, "config", os.Getenv("BENCHFLEET_CONFIG"), "worker config YAML (env BENCHFLEET_CONFIG)")
	fl.StringVar(&o.Slots, "slots", os.Getenv("BENCHFLEET_SLOTS"), "built-in slots pool=count[,pool=count], e.g. cpu=2,sim=8 (env BENCHFLEET_SLOTS)")
	fl.StringVar(&o.Worker.ID, "id", os.Getenv("BENCHFLEET_WORKER_ID"), "worker id (default: the config's id, else the hostname)")
	fl.StringVar(&o.Spool, "spool", os.Getenv("BENCHFLEET_SPOOL"), "local spool directory for results while the store is down")
	fl.StringVar(&o.Worker.WorkDir, "work-dir", "", "directory for per-job files (default the system temp dir)")
	fl.DurationVar(&o.Worker.JobTimeout, "job-timeout", 0, "default limit of one attempt when a job sets none (default 30m)")
	fl.DurationVar(&o.Worker.DrainTimeout, "drain-timeout", 0, "how long SIGTERM lets running jobs finish (default 10m)")
	fl.StringVar(&o.MetricsListen, "metrics-listen", os.Getenv("BENCHFLEET_METRICS_LISTEN"), "serve Prometheus /metrics and /healthz on this address, e.g. 127.0.0.1:9464 (config metrics_listen)")
	fl.StringVar(&o.NotifyURL, "notify", "", "POST quarantines and dead letters as JSON (Slack/Mattermost text) to this URL (config notify.url)")
	fl.StringVar(&o.StateDir, "state-dir", process.DefaultStateDir(), "where the worker remembers its spool per --id (env BENCHFLEET_STATE_DIR; default $STATE_DIRECTORY under systemd, else $XDG_STATE_HOME/benchfleet or ~/.local/state/benchfleet)")
	a.topologyFlags(cmd)
	return cmd
}

func (a *app) runWorker(cmd *cobra.Command, o process.Options) error {
	ctx := cmd.Context()
	o.StoreURL, o.Worker.MaxDeliver, o.Worker.Heartbeat = a.storeURL, a.maxDeliver, a.heartbeat
	if o.ConfigPath != "" {
		wf, err := configfile.Load(o.ConfigPath)
		if err == nil {
			err = o.UseFile(wf)
		}
		if err != nil {
			return configUsage(err)
		}
		a.natsURL = cmp.Or(a.natsURL, wf.NATS)
	}
	tc, err := a.topologyConfig()
	if err != nil {
		return err
	}
	o.Worker.AckWait, o.Worker.Replicas = tc.AckWait, tc.Replicas
	o.Connect = a.dial("benchfleet-worker")
	p, err := process.Start(ctx, o, a.log)
	if err != nil {
		return configUsage(err)
	}
	a.warnTopologyDrift(ctx, cmd, p.JetStream(), tc, p.Pools())
	fmt.Fprintf(a.stderr, "worker %s serving %d slot(s); SIGTERM drains, a second SIGTERM stops now\n", p.Worker().ID(), len(p.Slots()))
	// The worker outlives the first signal (and the end of the ctx from
	// Run, which carries it): it drains on SIGTERM, and stops hard on the
	// second.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			go p.Stop(context.Background())
		}
	}()
	go func() {
		<-ctx.Done()
		go p.Stop(context.Background())
	}()
	p.Wait()
	if n, dir := p.Spooled(); n > 0 {
		fmt.Fprintf(a.stderr, "%d result(s) still spooled in %s; they are uploaded when this worker starts with this spool again, or by: benchfleet spool drain %s\n",
			n, filepath.Clean(dir), filepath.Clean(dir))
	}
	return nil
}

// runnerHelp lists the registered runner kinds for --help.
func runnerHelp() string {
	var parts []string
	for _, k := range device.Kinds() {
		parts = append(parts, "  "+k.Name+": "+k.Summary)
	}
	return strings.Join(parts, "\n")
}
