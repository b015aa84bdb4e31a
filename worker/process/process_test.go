package process_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	_ "github.com/benchfleet/benchfleet/device/sim" // registers the sim runner
	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/storeurl"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/process"
)

func dial(url string) func(context.Context) (*nats.Conn, error) {
	return func(context.Context) (*nats.Conn, error) { return nats.Connect(url) }
}

// A process started from options runs jobs to stored results through its
// spool, serves /healthz, and once stopped has released its spool.
func TestStartRunsJobsAndStopReleases(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	dir := t.TempDir()
	storeURL := "file://" + filepath.Join(dir, "store")
	spool := filepath.Join(dir, "spool")
	p, err := process.Start(t.Context(), process.Options{
		Worker:  worker.Config{ID: "proc-1", AckWait: 5 * time.Second, IdlePoll: 100 * time.Millisecond},
		Connect: dial(srv.ClientURL()), StoreURL: storeURL, Slots: "sim=2", Spool: spool,
		StateDir: filepath.Join(dir, "state"), CheckID: true, MetricsListen: "127.0.0.1:0",
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if got := p.Pools(); len(got) != 1 || got[0] != "sim" {
		t.Errorf("pools %v, want [sim]", got)
	}
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	jobs := fleettest.SimJobs(t, "proc-run", 3, nil)
	fleettest.Submit(t, js, topo, p.Store(), "proc-run", protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 30*time.Second, "3 stored results", func() bool { return len(fleettest.Results(t, p.Store(), "proc-run")) == 3 })
	for _, r := range fleettest.Results(t, p.Store(), "proc-run") {
		if r.Status != protocol.StatusPassed {
			t.Errorf("job %s: %s (%v)", r.Job, r.Status, r.Error)
		}
	}
	resp, err := http.Get("http://" + p.MetricsAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", resp.StatusCode)
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before Done")
	}
	lock, err := dirlock.Acquire(spool, "test")
	if err != nil {
		t.Fatalf("the spool is still locked after Stop: %v", err)
	}
	lock.Unlock()
	if _, err := http.Get("http://" + p.MetricsAddr() + "/healthz"); err == nil {
		t.Error("/healthz still served after Stop")
	}
}

// A start that fails (an id a live worker holds, a spool another process
// holds) names the option and leaves nothing held: the same spool is
// usable as soon as its holder stops.
func TestStartRefusesAndLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	dir := t.TempDir()
	store, err := storeurl.Open(t.Context(), "file://"+filepath.Join(dir, "store"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	opts := func(id, spool string) process.Options {
		return process.Options{Worker: worker.Config{ID: id, Store: store, AckWait: 5 * time.Second, Heartbeat: 200 * time.Millisecond},
			Connect: dial(srv.ClientURL()), Slots: "sim=1", Spool: filepath.Join(dir, spool), CheckID: true}
	}
	first, err := process.Start(t.Context(), opts("twin", "a"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Kill)
	// The first worker's heartbeat is in bench-workers once it has run a beat.
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	fleettest.Eventually(t, 10*time.Second, "the first worker's heartbeat", func() bool {
		_, err := topo.Workers.Get(t.Context(), "twin")
		return err == nil
	})
	for _, c := range []struct {
		id, spool, option string
	}{{"twin", "b", "--id"}, {"other", "a", "--spool"}} {
		_, err := process.Start(t.Context(), opts(c.id, c.spool), zerolog.Nop())
		var oe *process.OptionError
		if !errors.As(err, &oe) || oe.Option != c.option {
			t.Errorf("start %s on spool %s beside a live twin: %v, want an OptionError naming %s", c.id, c.spool, err, c.option)
		}
	}
	// The refused start on spool b left it unlocked.
	lock, err := dirlock.Acquire(filepath.Join(dir, "b"), "test")
	if err != nil {
		t.Fatalf("a refused start left its spool locked: %v", err)
	}
	lock.Unlock()
	first.Kill()
	again, err := process.Start(t.Context(), opts("other", "a"), zerolog.Nop())
	if err != nil {
		t.Fatalf("start on the spool its holder released: %v", err)
	}
	again.Kill()
	if _, err := store.Exists(t.Context(), "x"); err != nil {
		t.Errorf("the caller's store was closed by the process: %v", err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, o := range []process.Options{
		{},
		{Connect: dial("nats://127.0.0.1:1"), Worker: worker.Config{AckWait: -time.Second}},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
	if err := (&process.Options{Connect: dial("nats://127.0.0.1:1")}).Validate(); err != nil {
		t.Errorf("Validate of a minimal config: %v", err)
	}
}
