package submit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// A run several times the publish window goes out with never more than
// MaxInFlight publishes unacknowledged, every job lands once, no per-job
// events are published (a manifest job without events is queued), and the
// chunked manifest names them all.
func TestSubmitBoundedInFlight(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	const n = 3*submit.MaxInFlight + 17
	jobs := fleettest.SimJobs(t, "bounded", n, nil)
	peak, calls := 0, 0
	p := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Log: zerolog.Nop(), Progress: func(stage string, done, total int) {
		calls++
		peak = max(peak, js.PublishAsyncPending())
		if stage != "published" || total != n || done != calls {
			t.Errorf("progress %s %d/%d at call %d", stage, done, total, calls)
		}
	}}
	res, err := p.Submit(t.Context(), submit.Submission{Run: "bounded", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	if peak > submit.MaxInFlight {
		t.Errorf("%d publishes unacknowledged at once, want at most %d", peak, submit.MaxInFlight)
	}
	if calls != n || res.Published != n {
		t.Errorf("progress called %d times, %d published; want %d", calls, res.Published, n)
	}
	info, err := topo.Jobs.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != n {
		t.Errorf("BENCH_JOBS holds %d jobs, want %d", info.State.Msgs, n)
	}
	events, err := fleet.ReadStored(t.Context(), js, protocol.StreamEvents, []string{protocol.RunEventsFilter("bounded")}, func(jetstream.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Errorf("%d events published by the submit, want none", events)
	}
	m, err := runstate.GetManifest(t.Context(), topo.Runs, "bounded")
	if err != nil || len(m.Jobs) != n {
		t.Fatalf("manifest: %v (%d jobs, want %d)", err, len(m.Jobs), n)
	}
	for i, j := range m.Jobs {
		if j.ID != jobs[i].ID || j.Cell != jobs[i].Cell() {
			t.Fatalf("manifest job %d is %s (%s), want %s", i, j.ID, j.Cell, jobs[i].ID)
		}
	}
	// Again: nothing new, it re-attaches.
	again, err := (&submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Log: zerolog.Nop()}).Submit(t.Context(),
		submit.Submission{Run: "bounded", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: fleettest.SimJobs(t, "bounded", n, nil)})
	if err != nil || !again.Attached {
		t.Errorf("re-submit: %v, attached %v", err, again != nil && again.Attached)
	}
}

// Publishes whose acks fail are not lost silently: with BENCH_JOBS gone,
// no job can be stored, and Submit fails naming a job instead of
// reporting the run submitted; no manifest is recorded (it follows the
// jobs), so nothing waits for jobs that are not there.
func TestSubmitFailedAcksAreReported(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	if err := js.DeleteStream(t.Context(), protocol.StreamJobs); err != nil {
		t.Fatal(err)
	}
	jobs := fleettest.SimJobs(t, "no-stream", 1500, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	p := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Log: zerolog.Nop()}
	res, err := p.Submit(ctx, submit.Submission{Run: "no-stream", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err == nil {
		t.Fatalf("Submit without BENCH_JOBS succeeded: %+v", res)
	}
	t.Logf("Submit without BENCH_JOBS: %v", err)
	if _, err := runstate.GetManifest(t.Context(), topo.Runs, "no-stream"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("manifest of a run whose jobs were not stored: %v, want none", err)
	}
}

// An invalid job publishes nothing: every job is checked first.
func TestSubmitInvalidJobPublishesNothing(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	jobs := fleettest.SimJobs(t, "bad-one", 50, nil)
	jobs[40].Benchmark.BatchSize = 8 // its id no longer binds its content
	p := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Log: zerolog.Nop()}
	_, err := p.Submit(t.Context(), submit.Submission{Run: "bad-one", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
	if !errors.Is(err, protocol.ErrInvalid) {
		t.Fatalf("Submit with a forged job: %v, want ErrInvalid", err)
	}
	info, err := topo.Jobs.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("BENCH_JOBS holds %d jobs after a refused submit, want 0", info.State.Msgs)
	}
}
