package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/process"
)

// localFleet is the embedded default: an in-process NATS server with
// JetStream, a store, and one worker process, all in one process.
type localFleet struct {
	server *server.Server
	proc   *process.Process
	nc     *nats.Conn
	store  storage.Bucket
	url    string
	// lock keeps a second process off the data directory.
	lock *dirlock.Lock
}

type localOptions struct {
	dataDir string
	listen  string
	slots   string
	workDir string
	// metrics serves the worker's /metrics and /healthz on this address.
	metrics string
	// command names the process in the data directory's lock ("dev", "demo").
	command string
}

// startLocal starts the pieces; close them with stop or kill. Results
// spool under DIR/spool while the store is unreachable (e.g. an s3://
// store that is down) and are uploaded when it is back.
func (a *app) startLocal(ctx context.Context, o localOptions) (*localFleet, error) {
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return nil, usageErr("--data %s: %v", o.dataDir, err)
	}
	lock, err := dirlock.Acquire(o.dataDir, "benchfleet "+o.command)
	if err != nil {
		if errors.Is(err, dirlock.ErrHeld) {
			return nil, usageErr("--data: %v", err)
		}
		return nil, err
	}
	lf := &localFleet{lock: lock}
	if lf.server, err = embedded.Start(embedded.Options{Dir: filepath.Join(o.dataDir, "nats"), Listen: o.listen}); err != nil {
		lf.close()
		return nil, err
	}
	lf.url = lf.server.ClientURL()
	a.natsURL = lf.url
	if a.storeURL == "" {
		abs, _ := filepath.Abs(filepath.Join(o.dataDir, "store"))
		a.storeURL = "file://" + abs
	}
	tc, err := a.topologyConfig()
	if err != nil {
		lf.close()
		return nil, err
	}
	lf.proc, err = process.Start(ctx, process.Options{
		Worker: worker.Config{ID: "local", Version: Version, AckWait: tc.AckWait, Replicas: tc.Replicas, MaxDeliver: a.maxDeliver,
			Heartbeat: a.heartbeat, WorkDir: o.workDir, DrainTimeout: time.Minute},
		Connect: a.dial("benchfleet-local-worker"), StoreURL: a.storeURL, Slots: o.slots, Spool: filepath.Join(o.dataDir, "spool"), MetricsListen: o.metrics, Out: a.stderr,
	}, a.log)
	if err != nil {
		lf.close()
		return nil, configUsage(err)
	}
	lf.nc, lf.store = lf.proc.Conn(), lf.proc.Store()
	return lf, nil
}

// stop drains the worker (running jobs finish, at most a minute) and
// closes everything.
func (lf *localFleet) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	_ = lf.proc.Stop(ctx)
	cancel()
	lf.close()
}

// kill stops the worker at once (running jobs are handed back) and closes
// everything.
func (lf *localFleet) kill() {
	lf.proc.Kill()
	lf.close()
}

func (lf *localFleet) close() {
	if lf.server != nil {
		lf.server.Shutdown()
		lf.server.WaitForShutdown()
	}
	lf.lock.Unlock()
}
