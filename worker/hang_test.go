package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// A job that hangs is stopped at its limits.timeout, retried with backoff
// (each retry announced with the reason), dead-lettered with the reason
// after MaxDeliver attempts, listed by `dlq list --format json`, and
// re-queued by `dlq retry`, after which it passes (sim.fail_attempts=3) as
// attempt 4.
func TestHangTimesOutRetriesDeadLettersAndRetries(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "hang-w", 1)
	cfg.MaxDeliver = 3
	fleettest.StartWorker(t, cfg)

	const run = "hang-1"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.fail": "hang", "sim.fail_attempts": "3", "sim.duration": "50ms"})
	jobs[0].Limits.Timeout = protocol.Duration(300 * time.Millisecond)
	job := jobs[0]
	start := time.Now()
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, jobs)

	fleettest.Eventually(t, 20*time.Second, "the hung job to be dead-lettered", func() bool {
		return len(eventsOf(f.events(t, run), job.ID, protocol.EventDead)) == 1
	})
	elapsed := time.Since(start)
	// Three 300ms attempts plus two short backoffs; far from the 30m default.
	if elapsed < 900*time.Millisecond || elapsed > 15*time.Second {
		t.Errorf("dead after %s; want three 300ms timeouts", elapsed)
	}
	evs := f.events(t, run)
	retrying := eventsOf(evs, job.ID, protocol.EventRetrying)
	if len(retrying) != 2 {
		t.Fatalf("%d retrying events, want 2: %+v", len(retrying), retrying)
	}
	for i, e := range retrying {
		if e.Attempt != i+1 || !strings.Contains(e.Message, "job timed out after 300ms") || !strings.Contains(e.Message, "retry in") {
			t.Errorf("retrying event %d: attempt %d message %q", i, e.Attempt, e.Message)
		}
	}
	dead := eventsOf(evs, job.ID, protocol.EventDead)[0]
	if dead.Attempt != 3 || !strings.Contains(dead.Message, "last of 3 attempts") || !strings.Contains(dead.Message, "timed out after 300ms") {
		t.Errorf("dead event: attempt %d message %q", dead.Attempt, dead.Message)
	}
	// The dead letter leaves one error result.
	if rs := fleettest.Results(t, f.store, run); len(rs) != 1 || !rs[job.ID].DeadLettered() || rs[job.ID].Attempt != 3 ||
		!strings.Contains(rs[job.ID].Error.Message, "last of 3 attempts") {
		t.Fatalf("a dead-lettered job's results: %+v, want its dead letter's error result of attempt 3", rs)
	}

	entries := f.dlqList(t)
	if len(entries) != 1 {
		t.Fatalf("dlq list: %d entries, want 1: %+v", len(entries), entries)
	}
	e := entries[0]
	if e.ID != job.ID || e.Pool != "sim" || e.Attempts != 3 || !strings.Contains(e.Reason, "timed out after 300ms") || e.Time.IsZero() {
		t.Errorf("dlq entry: %+v", e)
	}
	if got, err := protocol.DecodeJob(payloadBytes(t, e.Payload)); err != nil || got.ID != job.ID {
		t.Fatalf("dlq payload is not the original job: %v", err)
	}

	if retried, err := fleet.RetryDead(t.Context(), f.js, job.ID); err != nil || retried.ID != job.ID {
		t.Fatalf("dlq retry: %v", err)
	}
	var r *protocol.Result
	fleettest.Eventually(t, 20*time.Second, "the retried job's result", func() bool {
		r = fleettest.Results(t, f.store, run)[job.ID]
		return r != nil && !r.DeadLettered() // it replaces the dead letter's
	})
	if r.Status != protocol.StatusPassed || r.Attempt != 4 {
		t.Fatalf("retried job: status %s attempt %d (%v), want passed on attempt 4", r.Status, r.Attempt, r.Error)
	}
	if left := f.dlqList(t); len(left) != 0 {
		t.Errorf("dlq still lists %d entries after the retry", len(left))
	}
	// The retried job is acked (the ack follows the result).
	fleettest.Eventually(t, 10*time.Second, "no job left queued or unacked", func() bool {
		p, ack := f.consumerPending(t, "sim", protocol.PriorityNormal)
		return p == 0 && ack == 0
	})
}
