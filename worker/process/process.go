// Package process assembles a worker process from its options: the store,
// the spool and its lock, the NATS connection, the notifier, the metrics
// endpoint and the worker, started in the order a result needs (nothing is
// claimed before the spool is locked and the store is open) and closed in
// the reverse order once the worker has stopped. `benchfleet worker`,
// `dev` and `demo` start their worker through it; so can benches and tests.
//
//	p, err := process.Start(ctx, process.Options{Connect: dial, StoreURL: url, Slots: "sim=4"}, log)
//	...
//	defer p.Kill()
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/internal/notify"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/storage/storeurl"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// Options configure a worker process. Worker holds the worker's own
// settings; the others say what the process opens for it.
type Options struct {
	// Worker is the worker's configuration: ID (default File's id, else
	// the hostname), Version, AckWait, Replicas, MaxDeliver, Heartbeat,
	// the timeouts, WorkDir (default os.TempDir()) and the test knobs.
	// Conn, Store and Slots, when set, are used as given (and not closed
	// by the process); the process sets Sink (with a Spool), Registry
	// (with MetricsListen), Notifier (with NotifyURL) and Log.
	Worker worker.Config
	// Connect dials NATS when Worker.Conn is nil (then required). The
	// process closes the connection it made.
	Connect func(ctx context.Context) (*nats.Conn, error)
	// StoreURL is the result store (file:///dir or s3://bucket/prefix?...)
	// opened when Worker.Store is nil (then required), closed at the end.
	StoreURL string
	// File is the decoded worker config file (nil: none): its slots,
	// discovery, harness settings, build cache and job user.
	File *configfile.File
	// ConfigPath is File's path: a file the job user must not read.
	ConfigPath string
	// Slots are built-in slots, "pool=count[,pool=count]" (e.g. cpu=2),
	// besides the File's and Worker.Slots.
	Slots string
	// Spool is the local spool directory, locked for the process's life
	// ("" = none: results go straight to the store).
	Spool string
	// StateDir is where the worker remembers its spool per id: started
	// with another spool while the earlier one still holds results, it
	// refuses to start ("" = not remembered, not checked).
	StateDir string
	// CheckID refuses to start while another live worker holds the id
	// (its heartbeat in bench-workers is fresh and not that of a process
	// of this host that is gone).
	CheckID bool
	// MetricsListen serves Prometheus /metrics and /healthz on this
	// address ("" = no metrics).
	MetricsListen string
	// NotifyURL receives quarantined devices and dead-lettered jobs as a
	// JSON POST, each once ("" = nobody is told).
	NotifyURL string
	// Out is told, a line each, what the person starting the worker should
	// know: the box harness jobs run in, files the job user could read,
	// where metrics are served. Nil: not told.
	Out io.Writer
}

// OptionError is an option that cannot be used as given (a spool in use,
// an id a live worker holds, a bad notify URL, an address that cannot be
// listened on). Option names it as its flag does ("--spool"); empty when
// the error names it itself.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	return e.Option + ": " + e.Err.Error()
}

func (e *OptionError) Unwrap() error { return e.Err }

// Validate checks o without opening anything: a way to reach NATS, and
// the options only the worker reads (worker.New checks the rest). Start
// calls it; a missing store is found when Start opens it, after the slots.
func (o *Options) Validate() error {
	if o.Worker.Conn == nil && o.Connect == nil {
		return &OptionError{Err: errors.New("no NATS connection: Options.Connect or Worker.Conn is required")}
	}
	if o.Worker.AckWait < 0 || o.Worker.Heartbeat < 0 || o.Worker.MaxDeliver < 0 || o.Worker.DrainTimeout < 0 || o.Worker.JobTimeout < 0 {
		return &OptionError{Err: errors.New("negative ack wait, heartbeat, max deliver or timeout")}
	}
	return nil
}

// Process is a started worker process.
type Process struct {
	w     *worker.Worker
	log   zerolog.Logger
	nc    *nats.Conn
	js    jetstream.JetStream
	store storage.Bucket
	spool *spool.Spool
	slots []worker.Slot
	addr  string
	// stopRun ends the spool's uploader and the store's clean-up first;
	// closes then run last opened first, once the uploader has returned
	// (spoolDone is closed then; nil without a spool).
	stopRun   func()
	spoolDone chan struct{}
	closes    []func()
	done      chan struct{}
}

// Start opens what o names and starts the worker: it returns once the
// worker claims jobs. ctx bounds the start only; the process runs until
// Stop or Kill. On an error everything opened is closed again.
func Start(ctx context.Context, o Options, log zerolog.Logger) (_ *Process, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Process{log: log, done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	cfg := o.Worker
	cfg.Log = log
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	// The worker runs past ctx: Stop decides between a drain and a stop.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	p.stopRun = stopRun
	store := &storeRef{}
	if o.MetricsListen != "" {
		cfg.Registry = newRegistry()
	}
	cache, err := buildCache(o.File, cfg.WorkDir, store, cfg.Registry, log)
	if err != nil {
		return nil, err
	}
	if cache != nil {
		p.closes = append(p.closes, func() { cache.Close() })
	}
	slots, err := worker.BuildSlots(ctx, o.File, o.Slots, cfg.WorkDir, provisioner(cache), log)
	if err != nil {
		return nil, err
	}
	p.closes = append(p.closes, func() {
		if err := worker.CloseSlots(slots); err != nil {
			log.Warn().Err(err).Msg("closing the harness runners")
		}
	})
	cfg.Slots = append(append([]worker.Slot(nil), cfg.Slots...), slots...)
	if len(cfg.Slots) == 0 {
		return nil, &OptionError{Err: errors.New("no slots: give --slots (e.g. cpu=1) or a --config with slots or discovery")}
	}
	p.slots = cfg.Slots
	p.protect(o)
	if cfg.Store == nil {
		if o.StoreURL == "" {
			return nil, &OptionError{Err: errors.New("no result store: give --store URL or set BENCHFLEET_STORE")}
		}
		b, err := storeurl.Open(ctx, o.StoreURL, log)
		if errors.Is(err, storage.ErrBadStoreURL) {
			return nil, &OptionError{Option: "--store", Err: err}
		} else if err != nil {
			return nil, err
		}
		p.closes = append(p.closes, func() { b.Close() })
		cfg.Store = b
	}
	p.store = cfg.Store
	store.set(cfg.Store)
	if fb, ok := file.As(cfg.Store); ok {
		go removeStaleTemps(runCtx, fb, log)
	}
	if cfg.Conn == nil {
		nc, err := o.Connect(ctx)
		if err != nil {
			return nil, err
		}
		p.closes = append(p.closes, nc.Close)
		cfg.Conn = nc
	}
	p.nc = cfg.Conn
	if p.js, err = jetstream.New(cfg.Conn); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if cfg.ID == "" && o.File != nil {
		cfg.ID = o.File.ID
	}
	if cfg.ID == "" {
		cfg.ID, _ = os.Hostname()
	}
	ledger := spool.Ledger{Dir: o.StateDir}
	if err := p.checkStart(ctx, o, ledger, cfg.ID); err != nil {
		return nil, err
	}
	if o.NotifyURL != "" {
		n, err := notify.NewWebhook(notify.Config{URL: o.NotifyURL, Dedup: notify.StoreDedup{Bucket: cfg.Store}, Log: log})
		if err != nil {
			return nil, &OptionError{Option: "--notify (config notify.url)", Err: err}
		}
		cfg.Notifier = n
	}
	if o.Spool != "" {
		lock, err := acquire(o.Spool, "benchfleet worker "+cfg.ID, "--spool")
		if err != nil {
			return nil, err
		}
		p.closes = append(p.closes, lock.Unlock)
		if p.spool, err = spool.New(o.Spool, cfg.Store, log); err != nil {
			return nil, err
		}
		cfg.Sink = p.spool
		p.spoolDone = make(chan struct{})
		go func() {
			defer close(p.spoolDone)
			_ = p.spool.Run(runCtx) // nil once runCtx is done
		}()
	}
	if o.StateDir != "" {
		if err := ledger.Record(cfg.ID, o.Spool); err != nil {
			log.Warn().Err(err).Str("state_dir", o.StateDir).Msg("could not remember this worker's spool; a restart with another spool is not checked")
		}
	}
	w, err := worker.New(cfg)
	if err != nil {
		return nil, &OptionError{Err: err}
	}
	if err := w.Start(runCtx); err != nil {
		return nil, err
	}
	p.w = w
	if o.MetricsListen != "" {
		if err := p.serveHTTP(o.MetricsListen, o.Out); err != nil {
			w.Kill()
			<-w.Done()
			return nil, err
		}
	}
	go func() {
		<-w.Done()
		p.close()
	}()
	return p, nil
}

// protect makes the process non-dumpable (its /proc entries, and so its
// environment with the credentials, root's only, whatever user a harness
// job runs as) and tells which box each harness runs its jobs in and which
// of the worker's files that job user could read.
func (p *Process) protect(o Options) {
	isos := isolations(p.slots)
	if err := box.ProtectSelf(); err != nil {
		ev := p.log.Debug()
		if len(isos) > 0 {
			ev = p.log.Warn()
		}
		ev.Err(err).Msg("could not make the worker non-dumpable: processes of its user can read its environment")
	}
	for name, iso := range isos {
		p.log.Info().Str("runner", name).Str("isolation", iso).Msg("harness jobs run in a box")
		tell(o.Out, "%s jobs run %s\n", name, iso)
	}
	if len(isos) > 0 {
		p.warnReachable(o)
	}
}

func tell(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// Worker is the running worker.
func (p *Process) Worker() *worker.Worker { return p.w }

// Store is the result store the worker writes to.
func (p *Process) Store() storage.Bucket { return p.store }

// Conn is the worker's NATS connection.
func (p *Process) Conn() *nats.Conn { return p.nc }

// JetStream is the JetStream API of Conn.
func (p *Process) JetStream() jetstream.JetStream { return p.js }

// Slots are the worker's slots.
func (p *Process) Slots() []worker.Slot { return p.slots }

// Pools lists the pools of the worker's slots, each once.
func (p *Process) Pools() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range p.slots {
		if !seen[s.Device.Pool] {
			seen[s.Device.Pool] = true
			out = append(out, s.Device.Pool)
		}
	}
	return out
}

// MetricsAddr is the address /metrics and /healthz are served on ("" when
// Options.MetricsListen was empty).
func (p *Process) MetricsAddr() string { return p.addr }

// Spooled reports the results still in the spool, not in the store, and
// the spool's directory (0, "" without a spool).
func (p *Process) Spooled() (n int, dir string) {
	if p.spool == nil {
		return 0, ""
	}
	return p.spool.Pending(), p.spool.Dir()
}

// Stop drains the worker (no new job is claimed; running jobs finish,
// bounded by Worker.DrainTimeout and ctx, then are handed back) and closes
// everything; it returns when all is closed. Calling Stop again stops the
// running jobs at once.
func (p *Process) Stop(ctx context.Context) error {
	err := p.w.Stop(ctx)
	<-p.done
	return err
}

// Kill stops at once (running jobs are handed back) and closes everything.
func (p *Process) Kill() {
	p.w.Kill()
	<-p.done
}

// Done is closed when the worker has stopped and everything is closed.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until Done.
func (p *Process) Wait() { <-p.done }

// close stops the background work and waits for the spool's uploader to
// return (it writes in the spool, whose lock is among the closes), then
// runs the closes last opened first.
func (p *Process) close() {
	if p.stopRun != nil {
		p.stopRun()
	}
	if p.spoolDone != nil {
		<-p.spoolDone
	}
	for i := len(p.closes) - 1; i >= 0; i-- {
		p.closes[i]()
	}
	p.closes = nil
	close(p.done)
}
