package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

// localFleet is the embedded default: an in-process NATS server with
// JetStream, a store, and one worker, all in one process.
type localFleet struct {
	server *server.Server
	nc     *nats.Conn
	store  storage.Bucket
	worker *worker.Worker
	url    string
	// stopSpool ends the spool's background uploader.
	stopSpool context.CancelFunc
	// lock keeps a second process off the data directory.
	lock *dirlock.Lock
}

type localOptions struct {
	dataDir string
	listen  string
	slots   string
	workDir string
	// metrics registers the worker's metrics (served by the caller).
	metrics bool
	// command names the process in the data directory's lock ("dev", "demo").
	command string
}

// startLocal starts the pieces; close them with stop.
func (a *app) startLocal(ctx context.Context, o localOptions) (*localFleet, error) {
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return nil, usageErr("--data %s: %v", o.dataDir, err)
	}
	lf := &localFleet{}
	lock, err := dirlock.Acquire(o.dataDir, "benchfleet "+o.command)
	if err != nil {
		if errors.Is(err, dirlock.ErrHeld) {
			return nil, usageErr("--data: %v", err)
		}
		return nil, err
	}
	lf.lock = lock
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(o.dataDir, "nats"), Listen: o.listen})
	if err != nil {
		lf.close()
		return nil, err
	}
	lf.server = srv
	lf.url = srv.ClientURL()
	a.natsURL = lf.url
	if a.storeURL == "" {
		abs, _ := filepath.Abs(filepath.Join(o.dataDir, "store"))
		a.storeURL = "file://" + abs
	}
	tc, err := a.topologyConfig()
	if err != nil {
		lf.stop()
		return nil, configUsage(err)
	}
	if lf.store, err = a.openStore(ctx); err != nil {
		lf.stop()
		return nil, configUsage(err)
	}
	slots, err := worker.BuildSlots(ctx, nil, o.slots, o.workDir, nil, a.log)
	if err != nil {
		lf.stop()
		return nil, configUsage(err)
	}
	if lf.nc, _, err = a.connect(ctx, "benchfleet-local-worker"); err != nil {
		lf.stop()
		return nil, configUsage(err)
	}
	// Results spool under DIR/spool while the store is unreachable (e.g. an
	// s3:// store that is down) and are uploaded when it is back.
	spool, err := storage.NewSpool(filepath.Join(o.dataDir, "spool"), lf.store, a.log)
	if err != nil {
		lf.stop()
		return nil, configUsage(err)
	}
	spoolCtx, stopSpool := context.WithCancel(context.WithoutCancel(ctx))
	lf.stopSpool = stopSpool
	go spool.Run(spoolCtx)
	wcfg := worker.Config{
		ID: "local", Version: Version, Conn: lf.nc, Store: lf.store, Sink: spool, Slots: slots, AckWait: tc.AckWait, Replicas: tc.Replicas,
		MaxDeliver: a.maxDeliver, Heartbeat: a.heartbeat, WorkDir: o.workDir, Log: a.log,
		DrainTimeout: time.Minute,
	}
	if o.metrics {
		wcfg.Registry = newRegistry()
	}
	if err := box.ProtectSelf(); err != nil {
		a.log.Debug().Err(err).Msg("could not make the process non-dumpable")
	}
	w, err := worker.New(wcfg)
	if err != nil {
		lf.stop()
		return nil, usageErr("%v", err)
	}
	// The worker outlives ctx: stop decides between a drain and a hard stop.
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		lf.stop()
		return nil, configUsage(err)
	}
	lf.worker = w
	return lf, nil
}

// stop drains the worker (running jobs finish, at most a minute) and
// closes everything.
func (lf *localFleet) stop() {
	if lf.worker != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = lf.worker.Stop(ctx)
		cancel()
	}
	lf.close()
}

// kill stops the worker at once (running jobs are handed back) and closes
// everything.
func (lf *localFleet) kill() {
	if lf.worker != nil {
		lf.worker.Kill()
		<-lf.worker.Done()
	}
	lf.close()
}

func (lf *localFleet) close() {
	if lf.stopSpool != nil {
		lf.stopSpool()
	}
	if lf.nc != nil {
		lf.nc.Close()
	}
	if lf.store != nil {
		lf.store.Close()
	}
	if lf.server != nil {
		lf.server.Shutdown()
		lf.server.WaitForShutdown()
	}
	lf.lock.Unlock()
}
