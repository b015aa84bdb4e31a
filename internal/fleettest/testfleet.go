// Package fleettest starts real benchfleet pieces in process for tests: an
// embedded nats-server with JetStream (one node or a three-node cluster), a
// file store, and workers with sim or cpu slots.
package fleettest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
	"github.com/benchfleet/benchfleet/worker/process"
)

// Server starts a one-node embedded NATS server with JetStream under
// t.TempDir() and shuts it down at cleanup.
func Server(t testing.TB) *server.Server {
	t.Helper()
	s, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect dials url and closes the connection at cleanup.
func Connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Topology ensures the topology with a short AckWait suitable for tests.
func Topology(t testing.TB, js jetstream.JetStream, c topology.Config) *topology.Handles {
	t.Helper()
	h, err := topology.Ensure(t.Context(), js, c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// SimSlots returns n sim slots named prefix-0...
func SimSlots(prefix string, n int) []worker.Slot {
	var out []worker.Slot
	r := sim.New()
	for i := 0; i < n; i++ {
		out = append(out, worker.Slot{
			Device: device.Device{ID: fmt.Sprintf("%s-%d", prefix, i), Pool: "sim", Runner: "sim", Chips: 1, Healthy: true},
			Runner: r,
		})
	}
	return out
}

// StartWorker starts a worker of cfg the way `benchfleet worker` does,
// through worker/process, and stops it (hard) at cleanup. cfg.Conn and
// cfg.Store are used as given and left open; cfg.Log is the process's log;
// WorkDir defaults to t.TempDir(). No spool, state directory, metrics
// endpoint or notifier is set up, so nothing is written outside the test's
// directories.
func StartWorker(t testing.TB, cfg worker.Config) *worker.Worker {
	t.Helper()
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	p, err := process.Start(context.Background(), process.Options{Worker: cfg}, cfg.Log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p.Worker()
}

// SimJobs makes n sim jobs of run, each with its own "i" label and labels.
func SimJobs(t testing.TB, run string, n int, labels map[string]string) []*protocol.Job {
	t.Helper()
	var jobs []*protocol.Job
	for i := 0; i < n; i++ {
		l := map[string]string{"i": fmt.Sprint(i)}
		for k, v := range labels {
			l[k] = v
		}
		spec := submit.JobSpec{Pool: "sim", Runner: "sim", Labels: l,
			Benchmark: submit.BenchmarkSpec{Model: "simnet", BatchSize: 4, LoopCount: 10}}
		j, err := spec.Job(run, submit.SourceSpec{})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// Submit submits jobs as run. It re-derives each job's id from its content
// (protocol.JobID), so a test may edit jobs after making them.
func Submit(t testing.TB, js jetstream.JetStream, topo *topology.Handles, store storage.Bucket, run string, prio protocol.Priority, jobs []*protocol.Job) *submit.SubmitResult {
	t.Helper()
	p := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Store: store, Log: zerolog.Nop()}
	for _, j := range jobs {
		j.Priority = prio
		j.Run = run
		j.ID = protocol.JobID(run, j.Cell())
	}
	res, err := p.Submit(t.Context(), submit.Submission{Run: run, Submitter: "test", Priority: prio, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Eventually polls cond every 20ms until it holds or d passes.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreePort returns a free loopback port.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Results reads every result of run from store, keyed by job.
func Results(t testing.TB, store storage.Bucket, run string) map[string]*protocol.Result {
	t.Helper()
	out := map[string]*protocol.Result{}
	rs, bad, err := index.QueryJSON(t.Context(), store, index.Filter{Run: run})
	if err != nil || bad > 0 {
		t.Fatalf("query results: %v (%d unreadable)", err, bad)
	}
	for _, r := range rs {
		if _, dup := out[r.Job]; dup {
			t.Fatalf("two results for job %s", r.Job)
		}
		out[r.Job] = r
	}
	return out
}

// Options shape a Fleet. Zero values take the defaults given.
type Options struct {
	// AckWait is the topology's ack wait (default 3s: a crashed worker's
	// job comes back soon).
	AckWait time.Duration
	// Store is where results go (default a file store under t.TempDir()).
	Store storage.Bucket
}

// Fleet is the one fleet fixture: an embedded NATS server with the
// topology created, a client, and a store; workers are started on it with
// StartWorker and WorkerConfig.
type Fleet struct {
	Server   *server.Server
	URL      string
	Conn     *nats.Conn
	JS       jetstream.JetStream
	Topo     *topology.Handles
	Topology topology.Config
	Store    storage.Bucket
	// StoreURL is the store's URL for the command line; "" for a Store
	// given in Options that is not a file store.
	StoreURL string
}

// New starts a Fleet; everything is stopped at cleanup.
func New(t testing.TB, o Options) *Fleet {
	t.Helper()
	if o.AckWait == 0 {
		o.AckWait = 3 * time.Second
	}
	f := &Fleet{Server: Server(t), Topology: topology.Config{AckWait: o.AckWait}, Store: o.Store}
	f.URL = f.Server.ClientURL()
	if f.Store == nil {
		dir := t.TempDir()
		b, err := file.NewBucket(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		f.Store = b
	}
	if fb, ok := f.Store.(*file.Bucket); ok {
		f.StoreURL = "file://" + fb.Root()
	}
	f.Conn, f.JS = Connect(t, f.URL)
	f.Topo = Topology(t, f.JS, f.Topology)
	return f
}

// WorkerConfig is a worker named id on its own connection with slots,
// fast retries and idle polls, and no log.
func (f *Fleet) WorkerConfig(t testing.TB, id string, slots []worker.Slot) worker.Config {
	t.Helper()
	nc, _ := Connect(t, f.URL)
	return worker.Config{ID: id, Conn: nc, Store: f.Store, AckWait: f.Topology.AckWait, Replicas: f.Topology.Replicas, Slots: slots,
		Backoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, IdlePoll: 100 * time.Millisecond,
		Log: zerolog.Nop()}
}

// Pending is the number of queued, unclaimed jobs of pool at prio, and of
// claimed ones not yet acknowledged.
func (f *Fleet) Pending(t testing.TB, pool string, prio protocol.Priority) (pending uint64, ackPending int) {
	t.Helper()
	c, err := f.JS.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName(pool, prio))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.NumPending, info.NumAckPending
}

// Events reads every event of run so far from BENCH_EVENTS.
func (f *Fleet) Events(t testing.TB, run string) []protocol.Event {
	t.Helper()
	return Events(t, f.JS, run)
}

// Events reads every event of run so far from BENCH_EVENTS through js.
func Events(t testing.TB, js jetstream.JetStream, run string) []protocol.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []protocol.Event
	var bad error
	_, err := fleet.ReadStored(ctx, js, protocol.StreamEvents, []string{protocol.RunEventsFilter(run)}, func(m jetstream.Msg) {
		e, err := protocol.DecodeEvent(m.Data())
		if err != nil {
			bad = err
			return
		}
		out = append(out, *e)
	})
	if err = errors.Join(err, bad); err != nil {
		t.Fatal(err)
	}
	return out
}
