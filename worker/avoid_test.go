package worker_test

import (
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// avoidResult submits one sim job of run that avoids the boards avoid and
// returns its result once it is stored.
func (f *faultFleet) avoidResult(t *testing.T, run string, avoid []string, started func()) *protocol.Result {
	t.Helper()
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})
	jobs[0].Avoid = avoid
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	if started != nil {
		started()
	}
	var r *protocol.Result
	fleettest.Eventually(t, 60*time.Second, "the job's result", func() bool {
		r = fleettest.Results(t, f.store, run)[jobs[0].ID]
		return r != nil
	})
	return r
}

// delivered is how many deliveries the sim pool's normal consumer made.
func (f *faultFleet) delivered(t *testing.T) uint64 {
	t.Helper()
	c, err := f.js.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName("sim", protocol.PriorityNormal))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.Delivered.Consumer
}

// A job that avoids a worker's only board is handed back by it and runs on
// another worker's board; the pass costs none of the job's deliveries
// (MaxDeliver 1 would dead-letter it otherwise).
func TestAvoidedBoardPassesTheJobToAnotherWorker(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfgA := f.workerConfig(t, "avoid-a", 1)
	cfgA.MaxDeliver = 1
	fleettest.StartWorker(t, cfgA)
	cfgB := f.workerConfig(t, "avoid-b", 2)
	cfgB.MaxDeliver = 1
	cfgB.IdlePoll = 10 * time.Millisecond
	r := f.avoidResult(t, "avoid-2w", []string{"avoid-a/avoid-a-0"}, func() {
		// Worker a alone has the job first, then worker b comes.
		fleettest.Eventually(t, 20*time.Second, "worker a to be delivered the job", func() bool { return f.delivered(t) >= 1 })
		fleettest.StartWorker(t, cfgB)
	})
	if r.Status != protocol.StatusPassed || r.Worker.ID != "avoid-b" {
		t.Fatalf("result %s on %s (%v), want passed on worker avoid-b", r.Status, r.Board(), r.Error)
	}
	if r.Attempt < 2 {
		t.Fatalf("attempt %d: worker a never had the job", r.Attempt)
	}
}

// A job that avoids one board of a worker runs on the worker's other board.
func TestAvoidedBoardHandsTheJobToItsSibling(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "avoid-s", 2)
	cfg.MaxDeliver = 1
	fleettest.StartWorker(t, cfg)
	r := f.avoidResult(t, "avoid-sib", []string{"avoid-s/avoid-s-0"}, nil)
	if r.Status != protocol.StatusPassed || r.Board() != "avoid-s/avoid-s-1" {
		t.Fatalf("result %s on %s (%v), want passed on avoid-s/avoid-s-1", r.Status, r.Board(), r.Error)
	}
}

// With no other board, a job that avoids the only one is handed back for
// its first few deliveries, then runs there anyway; the passes do not
// count against MaxDeliver.
func TestAvoidedOnlyBoardRunsTheJobAfterAFewPasses(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "avoid-1", 1)
	cfg.MaxDeliver = 2
	fleettest.StartWorker(t, cfg)
	r := f.avoidResult(t, "avoid-one", []string{"avoid-1/avoid-1-0", "other/board"}, nil)
	if r.Status != protocol.StatusPassed || r.Board() != "avoid-1/avoid-1-0" {
		t.Fatalf("result %s on %s (%v), want passed on avoid-1/avoid-1-0", r.Status, r.Board(), r.Error)
	}
	if r.Attempt != 4 {
		t.Fatalf("ran on delivery %d, want 4 (after three passes)", r.Attempt)
	}
}
