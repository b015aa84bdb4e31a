package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/internal/notify"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

type workerFlags struct {
	config   string
	slots    string
	id       string
	spool    string
	workDir  string
	jobLimit time.Duration
	drain    time.Duration
	metrics  string
	notify   string
}

func (a *app) workerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker [--config FILE] [--slots cpu=2,sim=8] [--id NAME] [--spool DIR] [--metrics-listen ADDR] [--notify URL]",
		Short: "Serve this host's devices: claim jobs, run them, store results",
		Long: `Run a worker: one slot per device (Tenstorrent boards from discovery or the
config file, built-in cpu/sim slots from --slots). Each slot claims one job at
a time when its device is free, highest priority first.

SIGTERM drains: running jobs finish (bounded by timeouts.drain), nothing new
is claimed. A second SIGTERM stops at once and hands running jobs back.

--metrics-listen ADDR serves Prometheus /metrics and /healthz (200 while
NATS is connected and the spool, or without one the store, can take a
result; 503 otherwise). --notify URL (config notify.url) posts quarantined
devices and dead-lettered jobs as JSON, each once (docs/OPERATIONS.md).

Runners (a slot names its runner: slots[].runner, discovery.runner; a
harness's settings are forge: or harnesses.<name>: {workdir, python, env};
see docs/OPERATIONS.md):
` + runnerHelp(),
		Example: `  benchfleet worker --nats nats://nats-1:4222 --store s3://bench/farm --config /etc/benchfleet/worker.yaml
  benchfleet worker --nats nats://127.0.0.1:4222 --store file:///tmp/bf/store --slots cpu=1,sim=4   # beside "benchfleet dev --data /tmp/bf"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runWorker(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", os.Getenv("BENCHFLEET_CONFIG"), "worker config YAML (env BENCHFLEET_CONFIG)")
	fl.StringVar(&f.slots, "slots", os.Getenv("BENCHFLEET_SLOTS"), "built-in slots pool=count[,pool=count], e.g. cpu=2,sim=8 (env BENCHFLEET_SLOTS)")
	fl.StringVar(&f.id, "id", os.Getenv("BENCHFLEET_WORKER_ID"), "worker id (default: the config's id, else the hostname)")
	fl.StringVar(&f.spool, "spool", os.Getenv("BENCHFLEET_SPOOL"), "local spool directory for results while the store is down")
	fl.StringVar(&f.workDir, "work-dir", "", "directory for per-job files (default the system temp dir)")
	fl.DurationVar(&f.jobLimit, "job-timeout", 0, "default limit of one attempt when a job sets none (default 30m)")
	fl.DurationVar(&f.drain, "drain-timeout", 0, "how long SIGTERM lets running jobs finish (default 10m)")
	fl.StringVar(&f.metrics, "metrics-listen", os.Getenv("BENCHFLEET_METRICS_LISTEN"), "serve Prometheus /metrics and /healthz on this address, e.g. 127.0.0.1:9464 (config metrics_listen)")
	fl.StringVar(&f.notify, "notify", "", "POST quarantines and dead letters as JSON (Slack/Mattermost text) to this URL (config notify.url)")
	a.topologyFlags(cmd)
	return cmd
}

func (a *app) runWorker(cmd *cobra.Command, f *workerFlags) error {
	ctx := cmd.Context()
	var wf *worker.File
	if f.config != "" {
		var err error
		if wf, err = worker.LoadFile(f.config); err != nil {
			return configUsage(err)
		}
		if a.natsURL == "" {
			a.natsURL = wf.NATS
		}
		if a.storeURL == "" {
			a.storeURL = wf.Store
		}
		if f.id == "" {
			f.id = wf.ID
		}
		if f.spool == "" {
			f.spool = wf.Spool
		}
		if f.metrics == "" {
			f.metrics = wf.MetricsListen
		}
		if f.notify == "" {
			f.notify = wf.Notify.URL
		}
		job, drain, err := wf.Timeouts.Durations()
		if err != nil {
			return configUsage(err)
		}
		if f.jobLimit == 0 {
			f.jobLimit = job
		}
		if f.drain == 0 {
			f.drain = drain
		}
	}
	tc, err := a.topologyConfig()
	if err != nil {
		return err
	}
	if f.workDir == "" {
		f.workDir = os.TempDir()
	}
	// The worker's /proc entries (its environment holds credentials) are
	// root's only, whatever user a harness runs as.
	if err := box.ProtectSelf(); err != nil {
		a.log.Warn().Err(err).Msg("could not make the worker non-dumpable: processes of its user can read its environment")
	}
	slots, err := worker.BuildSlots(ctx, wf, f.slots, f.workDir, a.log)
	if err != nil {
		return configUsage(err)
	}
	if len(slots) == 0 {
		return usageErr("no slots: give --slots (e.g. cpu=1) or a --config with slots or discovery")
	}
	isos := isolations(slots)
	for name, iso := range isos {
		a.log.Info().Str("runner", name).Str("isolation", iso).Msg("harness jobs run in a box")
		fmt.Fprintf(a.stderr, "%s jobs run %s\n", name, iso)
	}
	if len(isos) > 0 {
		var user string
		if wf != nil {
			user = wf.Isolation.User
		}
		a.warnReachable(user, f.config, f.spool)
	}
	bucket, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer bucket.Close()
	nc, _, err := a.connect(ctx, "benchfleet-worker")
	if err != nil {
		return err
	}
	defer nc.Close()

	// The worker outlives the first signal: it drains on SIGTERM, and stops
	// hard on the second.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	cfg := worker.Config{
		ID: f.id, Version: Version, Conn: nc, Store: bucket, Slots: slots, Topology: tc,
		MaxDeliver: a.maxDeliver, Heartbeat: a.heartbeat, JobTimeout: f.jobLimit, DrainTimeout: f.drain,
		WorkDir: f.workDir, Log: a.log,
	}
	if f.metrics != "" {
		cfg.Registry = newRegistry()
	}
	if f.notify != "" {
		n, err := notify.NewWebhook(notify.Config{URL: f.notify, Dedup: notify.StoreDedup{Bucket: bucket}, Log: a.log})
		if err != nil {
			return usageErr("--notify (config notify.url): %v", err)
		}
		cfg.Notifier = n
	}
	var spool *storage.Spool
	if f.spool != "" {
		lock, err := dirlock.Acquire(f.spool, "benchfleet worker "+f.id)
		if err != nil {
			if errors.Is(err, dirlock.ErrHeld) {
				return usageErr("--spool: %v", err)
			}
			return err
		}
		defer lock.Unlock()
		spool, err = storage.NewSpool(f.spool, bucket, a.log)
		if err != nil {
			return err
		}
		cfg.Sink = spool
		go spool.Run(runCtx)
	}
	w, err := worker.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := w.Start(runCtx); err != nil {
		return err
	}
	if f.metrics != "" {
		stopHTTP, err := a.serveWorkerHTTP(f.metrics, w)
		if err != nil {
			w.Kill()
			<-w.Done()
			return err
		}
		defer stopHTTP()
	}
	fmt.Fprintf(a.stderr, "worker %s serving %d slot(s); SIGTERM drains, a second SIGTERM stops now\n", w.ID(), len(slots))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			go w.Stop(context.Background())
		}
	}()
	// The ctx from Run also carries the first signal.
	go func() {
		<-ctx.Done()
		go w.Stop(context.Background())
	}()
	<-w.Done()
	if spool != nil && spool.Pending() > 0 {
		fmt.Fprintf(a.stderr, "%d result(s) still spooled in %s; they are uploaded when a worker starts with this spool again\n",
			spool.Pending(), filepath.Clean(f.spool))
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

// isolations describes, by runner name, the box each harness runner of
// slots runs its jobs in.
func isolations(slots []worker.Slot) map[string]string {
	out := map[string]string{}
	for _, s := range slots {
		if r, ok := s.Runner.(interface{ Isolation() string }); ok {
			out[s.Runner.Name()] = r.Isolation()
		}
	}
	return out
}

// warnReachable warns, loudly, of every file with the worker's secrets or
// state that the job user could read: the config, the NATS credentials,
// the AWS shared files, the spool and a file store. A harness job is a
// pull request's code.
func (a *app) warnReachable(user string, paths ...string) {
	for _, k := range []string{"NATS_CREDS", "NATS_NKEY", "NATS_PASSWORD_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"} {
		paths = append(paths, os.Getenv(k))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config"))
	}
	if dir, ok := strings.CutPrefix(a.storeURL, "file://"); ok {
		paths = append(paths, dir)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if ok, err := box.Reachable(user, p); err == nil && ok {
			a.log.Warn().Str("path", p).Msg("readable by the harness's job user: a pull request's code could read it (chmod o-r, or a directory it cannot enter)")
			fmt.Fprintf(a.stderr, "WARNING: %s is readable by the harness's job user\n", p)
		}
	}
}
