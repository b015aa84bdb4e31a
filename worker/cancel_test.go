package worker_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// Cancelling a run (submit.CancelRun, `benchfleet runs cancel RUN`) stops the run's running jobs within a grace
// period and drops its queued ones: every job gets a cancelled result and a
// cancelled event; another run's job is untouched.
func TestRunsCancelStopsRunningAndDropsQueued(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	w := fleettest.StartWorker(t, f.workerConfig(t, "cancel-w", 2))

	const run, other = "cancel-1", "cancel-other"
	jobs := fleettest.SimJobs(t, run, 5, map[string]string{"sim.duration": "1m"})
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 10*time.Second, "two jobs running", func() bool {
		busy := 0
		for _, d := range w.Status().Devices {
			if d.State == protocol.DeviceBusy && d.Run == run {
				busy++
			}
		}
		if busy != 2 {
			return false
		}
		// The canceller knows a job runs from its claimed event, which
		// the worker publishes without waiting for its ack.
		return len(eventsOfKind(f.events(t, run), protocol.EventClaimed)) == 2
	})
	if p, _ := f.consumerPending(t, "sim", protocol.PriorityNormal); p != 3 {
		t.Fatalf("%d jobs queued, want 3", p)
	}

	if _, err := submit.CancelRun(t.Context(), f.js, submit.CancelRequest{Run: "no-such-run"}); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("cancel of an unknown run: %v, want jetstream.ErrKeyNotFound", err)
	}
	start := time.Now()
	// With the store, the queued jobs removed from the queue get their
	// cancelled results from the canceller.
	out, err := submit.CancelRun(t.Context(), f.js, submit.CancelRequest{Run: run, Store: f.store})
	// A slot freed by the cancel may claim a queued job before CancelRun
	// removes it (then the worker drops it): the results below count both.
	if err != nil || out.Finished {
		t.Fatalf("cancel: %+v, %v; want the run cancelled", out, err)
	}
	var results map[string]*protocol.Result
	fleettest.Eventually(t, 10*time.Second, "a cancelled result for every job", func() bool {
		results = fleettest.Results(t, f.store, run)
		return len(results) == len(jobs)
	})
	// The event and the ack follow the result.
	fleettest.Eventually(t, 10*time.Second, "a cancelled event for every job, every job acked", func() bool {
		n := 0
		for _, e := range f.events(t, run) {
			if e.Kind == protocol.EventCancelled {
				n++
			}
		}
		p, ack := f.consumerPending(t, "sim", protocol.PriorityNormal)
		return n >= len(jobs) && p == 0 && ack == 0
	})
	// The running jobs were one minute long: they were stopped, not waited for.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	evs := f.events(t, run)
	stopped, dropped := 0, 0
	for _, j := range jobs {
		r := results[j.ID]
		if r.Status != protocol.StatusCancelled || r.Error == nil || r.Error.Class != protocol.ClassCancelled {
			t.Errorf("job %s: status %s error %+v, want cancelled", j.ID, r.Status, r.Error)
			continue
		}
		switch {
		case strings.Contains(r.Error.Message, "while the job was running"):
			stopped++
		case strings.Contains(r.Error.Message, "before the job started"):
			dropped++
		default:
			t.Errorf("job %s: message %q", j.ID, r.Error.Message)
		}
		if ce := eventsOf(evs, j.ID, protocol.EventCancelled); len(ce) != 1 || ce[0].Status != protocol.StatusCancelled {
			t.Errorf("job %s: cancelled events %+v", j.ID, ce)
		}
		if pe := eventsOf(evs, j.ID, protocol.EventPassed); len(pe) != 0 {
			t.Errorf("job %s passed after the cancel", j.ID)
		}
	}
	if stopped != 2 || dropped != 3 {
		t.Errorf("%d stopped while running, %d dropped from the queue; want 2 and 3", stopped, dropped)
	}
	if p, ack := f.consumerPending(t, "sim", protocol.PriorityNormal); p != 0 || ack != 0 {
		t.Errorf("after cancel: %d queued, %d unacked", p, ack)
	}

	// The worker is fine and serves other runs.
	otherJobs := fleettest.SimJobs(t, other, 1, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, other, protocol.PriorityNormal, otherJobs)
	fleettest.Eventually(t, 10*time.Second, "the other run's result", func() bool {
		r := fleettest.Results(t, f.store, other)[otherJobs[0].ID]
		return r != nil && r.Status == protocol.StatusPassed
	})
}

func eventsOfKind(evs []protocol.Event, kind protocol.EventKind) []protocol.Event {
	var out []protocol.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}
