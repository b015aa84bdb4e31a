package cli

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/process"
)

// localFleet is the embedded default (process.Local): an in-process NATS
// server with JetStream, a store, and one worker, all in one process.
type localFleet struct{ *process.Local }

type localOptions struct {
	dataDir, listen, slots, workDir string
	// metrics serves the worker's /metrics and /healthz on this address.
	metrics string
	// command names the process in the data directory's lock ("dev", "demo").
	command string
}

// startLocal starts the pieces; close them with stop or kill.
func (a *app) startLocal(ctx context.Context, o localOptions) (*localFleet, error) {
	tc, err := a.topologyConfig()
	if err != nil {
		return nil, err
	}
	l, err := process.StartLocal(ctx, process.LocalOptions{DataDir: o.dataDir, Listen: o.listen, Command: "benchfleet " + o.command,
		Dial: func(ctx context.Context, url string) (*nats.Conn, error) {
			a.natsURL = url
			return a.dial("benchfleet-local-worker")(ctx)
		},
		Options: process.Options{StoreURL: a.storeURL, Slots: o.slots, MetricsListen: o.metrics, Out: a.stderr,
			Worker: worker.Config{ID: "local", AckWait: tc.AckWait, Replicas: tc.Replicas, MaxDeliver: a.maxDeliver,
				Heartbeat: a.heartbeat, WorkDir: o.workDir, DrainTimeout: time.Minute}},
	}, a.log)
	if err != nil {
		return nil, configUsage(err)
	}
	a.natsURL, a.storeURL = l.URL, l.StoreURL
	return &localFleet{Local: l}, nil
}

// stop drains the worker (running jobs finish, at most a minute) and
// closes everything.
func (lf *localFleet) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = lf.Stop(ctx)
}

// kill stops the worker at once (running jobs are handed back) and closes
// everything.
func (lf *localFleet) kill() { lf.Kill() }
