package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// CancelRequest is a run to cancel.
type CancelRequest struct {
	Run string
	// Store, if set, holds the run's results (they end their jobs: a job
	// is over when its result is stored) and receives a cancelled result
	// for each queued job removed.
	Store storage.Bucket
	// Ephemeral reads the run's events as Watcher.Ephemeral does (the
	// untrusted user of deploy/nats).
	Ephemeral bool
	// LeaveQueued leaves the run's queued jobs in their stream, for a
	// caller that may not delete them (the untrusted user of deploy/nats):
	// the cancel flag alone ends them, as the worker that claims one drops
	// it with a cancelled result. Counted in CancelResult.Queued.
	LeaveQueued bool
}

// CancelResult says what CancelRun did.
type CancelResult struct {
	Manifest *protocol.RunManifest
	// Finished is true when every job had already ended: nothing was changed.
	Finished bool
	// Removed counts the queued jobs deleted from their stream.
	Removed int
	// Queued counts the queued jobs left in their stream (LeaveQueued, or
	// a user that may not delete them, as deploy/nats's producer): each
	// is dropped, cancelled, when a worker claims it. With a store, each
	// has its cancelled result already (the run's views end it at once,
	// and the worker that claims it finds the result and runs nothing).
	Queued int
	// Running counts the jobs running now on live workers, which stop
	// them.
	Running int
	// Orphaned counts the jobs last seen running on workers that are gone
	// (no fresh heartbeat: killed, or cut off): nobody stops them now;
	// they are redelivered after the ack wait and dropped then, cancelled.
	Orphaned int
}

// CancelRun cancels a run that has not finished: it sets the cancel flag
// (workers stop the run's running jobs and drop any they claim later), then
// deletes the run's jobs still waiting in BENCH_JOBS, including those of
// pools no worker serves, and ends each with a cancelled event (and a
// cancelled result when req.Store is set). A user the server does not let
// delete queued jobs (natsconn.Rights: deploy/nats's producer, whose
// right would reach every run's jobs) leaves them queued instead, each
// still ended with its cancelled result and event, and the worker that
// claims one drops it (Queued). A run whose jobs have all ended
// is left as it is (Finished). An unknown run is jetstream.ErrKeyNotFound.
// It opens the topology and creates nothing.
func CancelRun(ctx context.Context, js jetstream.JetStream, req CancelRequest) (*CancelResult, error) {
	topo, err := topology.Open(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("cancel %s: %w", req.Run, err)
	}
	m, err := runstate.GetManifest(ctx, topo.Runs, req.Run)
	if err != nil {
		return nil, fmt.Errorf("cancel %s: %w", req.Run, err)
	}
	w := &watch.Watcher{JS: js, Manifest: m, Store: req.Store, Ephemeral: req.Ephemeral}
	states, err := w.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("cancel %s: %w", req.Run, err)
	}
	out := &CancelResult{Manifest: m, Finished: true}
	for _, st := range states {
		if !st.Terminal() {
			out.Finished = false
		}
	}
	if out.Finished {
		return out, nil
	}
	if err := Cancel(ctx, topo.Runs, req.Run); err != nil {
		return nil, err
	}
	// Now that no worker starts a job of the run, remove the queued ones
	// from the run's stream (protocol.RunTrust: BENCH_UNTRUSTED for an
	// untrusted run). A job of another run's name that the untrusted
	// producer put on its stream is the worker's to refuse.
	now := time.Now().UTC()
	stream, name, trust := topo.Jobs, protocol.StreamJobs, protocol.RunTrust(req.Run)
	if trust.Untrusted() {
		stream, name = topo.Untrusted, protocol.StreamUntrusted
	}
	switch {
	case req.LeaveQueued:
		for _, st := range states {
			if !st.Terminal() && !st.OnBoard() {
				out.Queued++
			}
		}
	case stream != nil:
		// What the server lets this user do (unknown rights: try).
		rights, _ := natsconn.ReadRights(ctx, js.Conn())
		q := queued{del: rights.MayPublish("$JS.API.STREAM.MSG.DELETE." + name), events: rights.MayPublish(protocol.EventSubject(req.Run, "x"))}
		if err := q.end(ctx, js, stream, trust, req, m, states, now, out); err != nil {
			return nil, err
		}
	}
	// Only a live worker stops a job; a job of a worker that is gone
	// waits for its redelivery. Without the fleet, every job counts.
	fleet, ferr := fleet.ReadFleet(ctx, topo.Workers)
	live := map[string]bool{}
	for _, w := range fleet {
		if w.Live(now) {
			live[w.ID] = true
		}
	}
	for _, st := range states {
		switch {
		case !st.OnBoard():
		case ferr == nil && !live[st.Worker]:
			out.Orphaned++
		default:
			out.Running++
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(eventsWait):
	case <-ctx.Done():
		return out, fmt.Errorf("cancel %s: %w", req.Run, ctx.Err())
	}
	return out, nil
}

// CancelSummary says what a cancel did, e.g. "2 jobs removed from the
// queue, 1 being stopped, 3 of workers that are gone (cancelled when
// redelivered)".
func CancelSummary(out *CancelResult) string {
	s := fmt.Sprintf("%s removed from the queue, %s being stopped", nJobs(out.Removed), nJobs(out.Running))
	if out.Queued > 0 {
		s = fmt.Sprintf("%s left queued (dropped, cancelled, when a worker claims them), %s being stopped", nJobs(out.Queued), nJobs(out.Running))
	}
	if out.Orphaned > 0 {
		s += fmt.Sprintf(", %s of workers that are gone (cancelled when redelivered)", nJobs(out.Orphaned))
	}
	return s
}

// nJobs is "1 job" or "n jobs".
func nJobs(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

// queued is what CancelRun may do to a run's queued jobs: delete them
// (del) and publish their cancelled events (events).
type queued struct{ del, events bool }

// end ends the queued jobs of req.Run in stream (one of the job streams,
// of trust): each removed (q.del; else left for the worker that claims it
// to drop, counted in out.Queued) and ended with a cancelled result (when
// req has a store) and event (q.events).
func (q queued) end(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, trust protocol.Trust, req CancelRequest, m *protocol.RunManifest, states map[string]*runstate.JobState, now time.Time, out *CancelResult) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("cancel %s: %w", req.Run, err)
	}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		raw, err := stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cancel %s: read queued job %d: %w", req.Run, seq, err)
		}
		var j protocol.Job
		if json.Unmarshal(raw.Data, &j) != nil || j.Run != req.Run {
			continue
		}
		st, ok := states[j.ID]
		if ok && st.OnBoard() {
			continue // running: its worker stops it and records the result
		}
		why := "run cancelled before the job started (left in the queue: the worker that claims it drops it)"
		if q.del {
			if err := stream.DeleteMsg(ctx, seq); err != nil {
				if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
					// Claimed and acknowledged meanwhile (the server reports
					// "no message found"); a worker that claims it drops it.
					continue
				}
				return fmt.Errorf("cancel %s: remove queued job %s: %w", req.Run, j.ID, err)
			}
			out.Removed++
			why = "run cancelled before the job started (removed from the queue)"
		} else {
			out.Queued++
		}
		var key string
		recordedElsewhere := false
		if req.Store != nil && j.ID != "" {
			r := &protocol.Result{Schema: protocol.SchemaResult, Job: j.ID, Run: j.Run, RunCreatedAt: m.CreatedAt,
				Pool: j.Pool, Runner: j.Runner, Status: protocol.StatusCancelled,
				Error:     &protocol.ResultError{Class: protocol.ClassCancelled, Message: why},
				StartedAt: now, FinishedAt: now, Benchmark: j.Benchmark, Source: j.Source, Labels: j.Labels,
				PCC: protocol.PCC{Min: j.Limits.PCCMin}, Trust: trust}
			k, err := storage.Deliver(ctx, req.Store, r, nil)
			switch {
			case err == nil:
				key = k
			case errors.Is(err, storage.ErrExists):
				// A worker claimed the job just now and recorded its
				// cancelled result (and event) itself: say nothing more.
				recordedElsewhere = true
			}
		}
		if recordedElsewhere || !q.events {
			continue
		}
		publishEvent(js, protocol.Event{Schema: protocol.SchemaEvent, Run: j.Run, Job: j.ID, Time: now,
			Kind: protocol.EventCancelled, Status: protocol.StatusCancelled, Pool: j.Pool, Message: why, Result: key})
	}
	return nil
}
