package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// avoidResult submits one sim job of run, a confirmation repeat (only
// repeats avoid boards) that avoids the boards avoid, and returns its
// result once it is stored.
func (f *faultFleet) avoidResult(t *testing.T, run string, avoid []string, started func()) *protocol.Result {
	t.Helper()
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})
	jobs[0].Repeat, jobs[0].Avoid = 1, avoid
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
	w := fleettest.StartWorker(t, cfg)
	r := f.avoidResult(t, "avoid-sib", []string{"avoid-s/avoid-s-0"}, nil)
	if r.Status != protocol.StatusPassed || r.Board() != "avoid-s/avoid-s-1" {
		t.Fatalf("result %s on %s (%v), want passed on avoid-s/avoid-s-1", r.Status, r.Board(), r.Error)
	}
	// The job counts once among the worker's completed jobs, on the board
	// that ran it: a board that passed it on did not complete it.
	done := func() (total, avoided int64) {
		for _, d := range w.Status().Devices {
			total += d.Done
			if d.ID == "avoid-s-0" {
				avoided += d.Done
			}
		}
		return total, avoided
	}
	fleettest.Eventually(t, 10*time.Second, "the job counted done", func() bool { n, _ := done(); return n >= 1 })
	if total, avoided := done(); total != 1 || avoided != 0 {
		t.Fatalf("devices' Done: %d in all, %d on the avoided board; want 1, 0", total, avoided)
	}
}

// A job that is not a confirmation repeat is not passed on for the boards
// it names in Avoid, and gets no extra deliveries for them: one that hangs
// is dead-lettered after MaxDeliver deliveries, as any job. A repeat that
// avoids the only board is passed on for its first three deliveries, which
// do not count, and its dead letter says so.
func TestAvoidExcusesPassesOfRepeatsOnly(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "avoid-h", 1)
	cfg.MaxDeliver = 2
	fleettest.StartWorker(t, cfg)
	for _, c := range []struct {
		run        string
		repeat     int
		deliveries int
		note       string
	}{
		{"avoid-hang-0", 0, 2, ""},
		{"avoid-hang-1", 1, 5, "3 more deliveries, within the first 3, were taken for passes"},
	} {
		jobs := fleettest.SimJobs(t, c.run, 1, map[string]string{"sim.fail": "hang", "sim.duration": "50ms"})
		jobs[0].Limits.Timeout = protocol.Duration(300 * time.Millisecond)
		jobs[0].Repeat, jobs[0].Avoid = c.repeat, []string{"avoid-h/avoid-h-0"}
		fleettest.Submit(t, f.js, f.topo, f.store, c.run, protocol.PriorityNormal, jobs)
		id := jobs[0].ID
		fleettest.Eventually(t, 30*time.Second, c.run+" dead-lettered", func() bool {
			return len(eventsOf(f.events(t, c.run), id, protocol.EventDead)) == 1
		})
		evs := f.events(t, c.run)
		dead := eventsOf(evs, id, protocol.EventDead)[0]
		if dead.Attempt != c.deliveries || !strings.Contains(dead.Message, "last of 2 attempts") ||
			!strings.Contains(dead.Message, c.note) || (c.note == "" && strings.Contains(dead.Message, "pass")) {
			t.Errorf("%s (repeat %d): dead on delivery %d: %q; want delivery %d, the last of 2 attempts, note %q",
				c.run, c.repeat, dead.Attempt, dead.Message, c.deliveries, c.note)
		}
		if n := len(eventsOf(evs, id, protocol.EventClaimed)); n != 2 {
			t.Errorf("%s: ran %d times, want 2 (MaxDeliver)", c.run, n)
		}
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
