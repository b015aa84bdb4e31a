package watch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// behindFrozenProxy runs one sim job of run to its stored result on f,
// and returns a JetStream client connected to f's server through a proxy
// that then stops forwarding: a connection gone half-open, or a server
// that froze, while the client still takes it for up.
func behindFrozenProxy(t *testing.T, f *fleettest.Fleet, run string) (jetstream.JetStream, *protocol.RunManifest) {
	t.Helper()
	fleettest.StartWorker(t, f.WorkerConfig(t, "frozen-w", fleettest.SimSlots("frozen", 1)))
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})
	res := fleettest.Submit(t, f.JS, f.Topo, f.Store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool { return len(fleettest.Results(t, f.Store, run)) == 1 })
	proxy := fleettest.StartProxy(t, strings.TrimPrefix(f.URL, "nats://"))
	nc, err := nats.Connect("nats://"+proxy.Addr(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Freeze()
	return js, res.Manifest
}

// A read of stored events whose server stops answering fails within its
// own deadline, not at the caller's (here 10 minutes, as a bisect's 6
// hours was): no JetStream call of a wait waits on the caller's deadline
// alone.
func TestReadStoredDoesNotWaitOnTheCallersDeadline(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{})
	js, _ := behindFrozenProxy(t, f, "frozen-read")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := fleet.ReadStored(ctx, js, protocol.StreamEvents, []string{protocol.RunEventsFilter("frozen-read")}, func(jetstream.Msg) {})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("ReadStored: %v, want its own deadline's error", err)
		}
	case <-time.After(fleet.CallTimeout + 20*time.Second):
		t.Fatalf("ReadStored still waiting %s after its server stopped answering", fleet.CallTimeout+20*time.Second)
	}
}

// A wait whose NATS stops answering (the store holds every result) says
// so once (OnOutage) and keeps waiting: the events must be read before it
// judges the run ended. When its deadline passes meanwhile, the error Is
// ErrUnreachable (the command line's exit 69), not ctx's.
func TestWaitBehindAFrozenConnectionEndsUnreachable(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{})
	js, m := behindFrozenProxy(t, f, "frozen-wait")
	var mu sync.Mutex
	var told []watch.Outage
	w := &watch.Watcher{JS: js, Manifest: m, Store: f.Store, Poll: 200 * time.Millisecond, OnOutage: func(o watch.Outage) {
		mu.Lock()
		told = append(told, o)
		mu.Unlock()
	}}
	wait := fleet.CallTimeout + 5*time.Second
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	_, err := w.Wait(ctx, nil)
	var oe *watch.OutageError
	if !errors.Is(err, watch.ErrUnreachable) || !errors.As(err, &oe) || oe.Outage.NATS == "" || oe.Outage.Store != "" {
		t.Fatalf("Wait: %v, want an outage of NATS only", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || told[0].NATS == "" || !strings.Contains(told[0].String(), "NATS has not answered since") {
		t.Errorf("OnOutage told %+v, want once that NATS does not answer", told)
	}
	t.Logf("%v", err)
}
