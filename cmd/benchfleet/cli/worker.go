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

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/internal/notify"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
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
	stateDir string
	jobMax   time.Duration // config timeouts.job_max
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

A worker id is one process at a time: a worker whose id another live worker
holds (a fresh heartbeat in bench-workers) refuses to start; one whose
earlier process on this host was killed starts at once. A worker remembers
its spool (--state-dir): started with another --spool, or none, while the
earlier spool still holds results not in the store, it refuses to start and
names that folder (start with it again, or empty it with
"benchfleet spool drain DIR"). A file store's temporary files left by a
process killed mid-write (.tmp-*, older than an hour) are removed at start.

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
	fl.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "where the worker remembers its spool per --id (env BENCHFLEET_STATE_DIR; default $STATE_DIRECTORY under systemd, else $XDG_STATE_HOME/benchfleet or ~/.local/state/benchfleet)")
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
		if f.jobMax, err = wf.Timeouts.MaxJob(); err != nil {
			return configUsage(err)
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
	store := &storeRef{}
	var reg *prometheus.Registry
	if f.metrics != "" {
		reg = newRegistry()
	}
	cache, err := a.buildCache(wf, f.workDir, store, reg)
	if err != nil {
		return err
	}
	if cache != nil {
		defer cache.Close()
	}
	slots, err := worker.BuildSlots(ctx, wf, f.slots, f.workDir, provisioner(cache), a.log)
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
	store.set(bucket)
	if fb, ok := storage.AsFile(bucket); ok {
		go a.removeStaleTemps(ctx, fb)
	}
	nc, js, err := a.connect(ctx, "benchfleet-worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	// worker.Config's default id, resolved here to check it first.
	if f.id == "" {
		f.id, _ = os.Hostname()
	}
	ledger := storage.SpoolLedger{Dir: f.stateDir}
	if err := a.checkWorkerStart(ctx, js, ledger, f.id, f.spool); err != nil {
		return err
	}

	// The worker outlives the first signal: it drains on SIGTERM, and stops
	// hard on the second.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	cfg := worker.Config{
		ID: f.id, Version: Version, Conn: nc, Store: bucket, Slots: slots, AckWait: tc.AckWait, Replicas: tc.Replicas,
		MaxDeliver: a.maxDeliver, Heartbeat: a.heartbeat, JobTimeout: f.jobLimit, MaxJobTimeout: f.jobMax, DrainTimeout: f.drain,
		WorkDir: f.workDir, Log: a.log,
	}
	if reg != nil {
		cfg.Registry = reg
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
	if err := ledger.Record(f.id, f.spool); err != nil {
		a.log.Warn().Err(err).Str("state_dir", f.stateDir).Msg("could not remember this worker's spool; a restart with another spool is not checked")
	}
	w, err := worker.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := w.Start(runCtx); err != nil {
		return err
	}
	a.warnTopologyDrift(ctx, cmd, js, tc, slotPools(slots))
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
		fmt.Fprintf(a.stderr, "%d result(s) still spooled in %s; they are uploaded when this worker starts with this spool again, or by: benchfleet spool drain %s\n",
			spool.Pending(), filepath.Clean(f.spool), filepath.Clean(f.spool))
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

// checkWorkerStart refuses to start worker id when another live worker
// holds the id, or when a spool it used before still holds results and it
// starts with another one (spool; "" = none). The id's last heartbeat in
// bench-workers, if still there, also names its spool on this host.
func (a *app) checkWorkerStart(ctx context.Context, js jetstream.JetStream, ledger storage.SpoolLedger, id, spool string) error {
	host, _ := os.Hostname()
	var also []string
	kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(kctx, protocol.BucketWorkers)
	if err == nil {
		prev, err := producer.CheckWorkerID(kctx, kv, id, host, os.Getpid(), processAlive)
		if errors.Is(err, producer.ErrWorkerIDLive) {
			return usageErr("--id: %v", err)
		}
		if err != nil {
			a.log.Warn().Err(err).Str("worker", id).Msg("could not read this id's last heartbeat; not checked for a live twin")
		}
		if prev != nil && prev.Host == host && prev.Spool != nil {
			also = append(also, prev.Spool.Path)
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		a.log.Warn().Err(err).Str("worker", id).Msg("could not read bench-workers; this id is not checked for a live twin")
	}
	if err := ledger.Check(id, spool, also...); err != nil {
		if errors.Is(err, storage.ErrSpoolMoved) {
			return usageErr("--spool: %v", err)
		}
		a.log.Warn().Err(err).Msg("could not check this worker's earlier spool")
	}
	return nil
}

// removeStaleTemps removes what Puts killed mid-write left in a file store.
func (a *app) removeStaleTemps(ctx context.Context, fb *storage.FileBucket) {
	n, err := fb.RemoveStaleTemps(ctx, storage.StaleTempAge)
	if err != nil {
		a.log.Warn().Err(err).Msg("could not remove stale temporary files from the file store")
		return
	}
	if n > 0 {
		a.log.Info().Int("removed", n).Str("store", fb.Root()).Msg("removed temporary files of writes killed midway")
	}
}

// defaultStateDir is where a worker remembers its spool: BENCHFLEET_STATE_DIR,
// else systemd's StateDirectory= ($STATE_DIRECTORY), else the XDG state
// directory; "" when none is known.
func defaultStateDir() string {
	if d := os.Getenv("BENCHFLEET_STATE_DIR"); d != "" {
		return d
	}
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "benchfleet")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "benchfleet")
	}
	return ""
}

// processAlive reports whether a process with pid runs on this host.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
