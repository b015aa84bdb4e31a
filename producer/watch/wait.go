package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	workers "github.com/benchfleet/benchfleet/worker/fleet"
)

// ScanTimeout bounds one listing of a run's results in the store (the
// other calls of a wait are bounded by fleet.CallTimeout).
const ScanTimeout = 30 * time.Second

// DefaultResultPoll is how often Wait looks in the store for results of
// jobs that have not ended yet (Watcher.Poll).
const DefaultResultPoll = 2 * time.Second

// DefaultResultGrace is how long Wait waits for the result of a job whose
// terminal event it has seen before it calls Watcher.OnMissing
// (Watcher.ResultGrace).
const DefaultResultGrace = 30 * time.Second

// Watcher follows one run: its events from the start of BENCH_EVENTS, so a
// late waiter still sees everything, and its results in the store, which
// alone decide how each job ended.
type Watcher struct {
	JS       jetstream.JetStream
	Manifest *protocol.RunManifest
	// Ephemeral reads BENCH_EVENTS through consumers made by JetStream's
	// legacy ephemeral endpoint (which creates no durable) instead of
	// ordered consumers: what the untrusted user of deploy/nats may use.
	Ephemeral bool
	// Store holds the run's results. Without it no job ends but by a dead
	// letter: Wait waits until ctx ends, Snapshot shows events only.
	Store storage.Bucket
	// Poll is how often the store is listed for results of jobs not ended
	// yet, so a job ends even when its events were lost or its result was
	// spooled and uploaded later (default DefaultResultPoll).
	Poll time.Duration
	// ResultGrace is how long after a job's terminal event (one that does
	// not say the result was spooled) its result may take to appear in
	// Store before Wait calls OnMissing (default DefaultResultGrace).
	ResultGrace time.Duration
	// OnMissing, if not nil, is called by Wait once per job whose terminal
	// event it saw and whose result Store still lacks after ResultGrace:
	// most often the worker writes to another store than this one
	// (MissingResultNote says so). Wait goes on waiting.
	OnMissing func(st *runstate.JobState, after time.Duration)
	// OnOutage, if not nil, is called by Wait when the store or NATS
	// stops or starts answering it (Outage.String says it in one line).
	// Wait goes on waiting.
	OnOutage func(Outage)
}

// Initial is the state of every job before any event is read.
func (w *Watcher) Initial() map[string]*runstate.JobState {
	states := map[string]*runstate.JobState{}
	for _, j := range w.Manifest.Jobs {
		states[j.ID] = &runstate.JobState{Job: j}
	}
	return states
}

// readResult reads the result of one job of the run from the store at the
// manifest's key. It returns nil when there is none (or it is not this
// job's: a result must name the job and run it is stored for).
func (w *Watcher) readResult(ctx context.Context, job string) (*protocol.Result, error) {
	if w.Store == nil {
		return nil, nil
	}
	r, err := storage.ReadResult(ctx, w.Store, storage.ResultKey(w.Manifest.CreatedAt, w.Manifest.Run, job))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.Job != job || r.Run != w.Manifest.Run {
		return nil, nil
	}
	return r, nil
}

// scanResults lists the run's result folder once and reads the results of
// jobs in states that have none yet; it calls changed for each job found.
func (w *Watcher) scanResults(ctx context.Context, states map[string]*runstate.JobState, changed func(*runstate.JobState, *protocol.Result)) error {
	if w.Store == nil {
		return nil
	}
	prefix := strings.TrimSuffix(storage.ResultKey(w.Manifest.CreatedAt, w.Manifest.Run, "x"), "x.json")
	for key, err := range w.Store.List(ctx, prefix) {
		if err != nil {
			return fmt.Errorf("results of run %s: %w", w.Manifest.Run, err)
		}
		_, run, job, ok := storage.ResultKeyParts(key)
		if !ok || run != w.Manifest.Run {
			continue
		}
		st, ok := states[job]
		if !ok || st.Result != nil {
			continue
		}
		r, err := w.readResult(ctx, job)
		if err != nil {
			return fmt.Errorf("results of run %s: %w", w.Manifest.Run, err)
		}
		if st.Accepts(r) {
			changed(st, r)
		}
	}
	return nil
}

// Wait follows the run until every job of the manifest has ended (its
// result is stored, or it was dead-lettered) or ctx ends (then it returns
// the states so far and ctx's error). onUpdate, if not nil, is called after
// each change with the new progress.
//
// An outage does not end the wait: each call to the store or NATS has its
// own deadline (ScanTimeout, CallTimeout), and while the store or NATS
// does not answer Wait keeps waiting, tells OnOutage when what does not
// answer changes, and asks again every Poll. The run's stored events are
// read to their end (after an outage, from where the reading stopped)
// before Wait judges the run ended. When ctx's deadline passes during an
// outage, the error is an *OutageError (it Is ErrUnreachable), not ctx's.
func (w *Watcher) Wait(ctx context.Context, onUpdate func(runstate.Progress)) (map[string]*runstate.JobState, error) {
	run := w.Manifest.Run
	states := w.Initial()
	remaining := len(states)
	// live: the stored results and events have been read, so progress
	// reports the run's current state (before, a finished run would first
	// show the one result read so far).
	live := false
	// change applies fn to st and keeps remaining in step.
	change := func(st *runstate.JobState, fn func()) {
		was := st.Terminal()
		fn()
		switch now := st.Terminal(); {
		case !was && now:
			remaining--
		case was && !now:
			remaining++ // a dead job re-queued by dlq retry
		}
		if onUpdate != nil && live {
			onUpdate(runstate.ProgressFrom(run, states, st))
		}
	}
	setResult := func(st *runstate.JobState, r *protocol.Result) { change(st, func() { st.Result = r }) }
	out := &outageTracker{on: w.OnOutage}
	// scan lists the run's results once; a failure that is not an outage
	// is returned.
	scan := func() error {
		cctx, cancel := context.WithTimeout(ctx, ScanTimeout)
		err := w.scanResults(cctx, states, setResult)
		cancel()
		out.store(ctx, err)
		if storageOutage(ctx, err) {
			return nil
		}
		return err
	}
	// lookup reads the result of a job reported ended.
	lookup := func(st *runstate.JobState) {
		cctx, cancel := context.WithTimeout(ctx, workers.CallTimeout)
		r, err := w.readResult(cctx, st.Job.ID)
		cancel()
		out.store(ctx, err)
		if err == nil && st.Accepts(r) {
			setResult(st, r)
		}
	}
	if err := scan(); err != nil {
		if ctx.Err() != nil {
			return states, out.timedOut(ctx, run)
		}
		return states, fmt.Errorf("watch run %s: %w", run, err)
	}
	f := &eventFeed{w: w, states: states, events: make(chan *protocol.Event, 256)}
	defer f.stop()
	// follow replays the stored events and starts following new ones,
	// unless it has; a failure that is not an outage is returned.
	follow := func() error {
		if f.following() {
			return nil
		}
		replayedBefore := f.replayed
		err := f.start(ctx, &remaining)
		out.nats(ctx, natsWhy(ctx, err))
		if err != nil && !natsOutage(ctx, err) {
			return err
		}
		if f.replayed && !replayedBefore {
			// Jobs reported ended by the replayed events: look for
			// their results.
			for _, st := range states {
				if st.Reported() {
					lookup(st)
				}
			}
			if onUpdate != nil && live {
				onUpdate(runstate.ProgressFrom(run, states, nil))
			}
		}
		return nil
	}
	if err := follow(); err != nil {
		if ctx.Err() != nil {
			return states, out.timedOut(ctx, run)
		}
		return states, fmt.Errorf("watch run %s: %w", run, err)
	}
	live = true
	if onUpdate != nil {
		onUpdate(runstate.ProgressFrom(run, states, nil))
	}
	poll := w.Poll
	if poll <= 0 {
		poll = DefaultResultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	missing := w.missingResults(states)
	for !f.replayed || remaining > 0 {
		select {
		case <-ctx.Done():
			return states, out.timedOut(ctx, run)
		case <-tick.C:
			// The store is the truth; a listing that fails is tried again
			// on the next tick.
			_ = scan()
			if f.following() {
				out.nats(ctx, f.health(ctx, out.cur.NATS != ""))
			} else {
				_ = follow() // a refusal now: events are progress, the wait goes on
			}
			if out.cur.Store == "" {
				missing.check(time.Now())
			}
		case e := <-f.events:
			st, ok := states[e.Job]
			if !ok {
				continue
			}
			change(st, func() { runstate.ApplyEvent(st, e) })
			if st.Reported() {
				// The worker stores the result before its terminal event.
				lookup(st)
			}
			missing.seen(st, time.Now())
		}
	}
	return states, nil
}

// Snapshot returns the current state of every job of the run: its stored
// results and the events stored so far, without waiting for more.
func (w *Watcher) Snapshot(ctx context.Context) (map[string]*runstate.JobState, error) {
	states := w.Initial()
	if err := w.scanResults(ctx, states, func(st *runstate.JobState, r *protocol.Result) { st.Result = r }); err != nil {
		return states, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	if w.JS == nil {
		return states, nil // results only (NATS not reachable)
	}
	_, err := workers.ReadStoredFrom(ctx, w.JS, protocol.StreamEvents, []string{protocol.RunEventsFilter(w.Manifest.Run)}, 1, w.Ephemeral, func(m jetstream.Msg) {
		if e, err := protocol.DecodeEvent(m.Data()); err == nil && protocol.TrustedEvent(m.Subject(), e.Kind) {
			if st, ok := states[e.Job]; ok {
				runstate.ApplyEvent(st, e)
			}
		}
	})
	if err != nil {
		return states, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	return states, nil
}

// WatchService runs sw (its Workers from js's bench-workers) until the
// returned stop is called: it checks the fleet once before it returns,
// then watches in a goroutine that stop ends and waits for. A fleet that
// cannot be opened is no watch (it is a hint): stop does nothing then.
func WatchService(ctx context.Context, js jetstream.JetStream, sw *ServiceWatch) (stop func()) {
	// A JetStream that does not answer soon is no watch: the wait goes on.
	octx, cancelOpen := context.WithTimeout(ctx, workers.CallTimeout)
	topo, err := topology.Open(octx, js)
	cancelOpen()
	if err != nil {
		return func() {}
	}
	sw.Workers = topo.Workers
	sw.Check(ctx)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// SpooledReport says, per worker, which of a run's results (progress p)
// wait in a worker's spool and what becomes of them, from the fleet's
// heartbeats read through js (SpooledNotes); nil when none is spooled.
func SpooledReport(ctx context.Context, js jetstream.JetStream, p runstate.Progress) []string {
	if p.All.Spooled == 0 && p.Repeats.Spooled == 0 {
		return nil
	}
	var fleet []protocol.WorkerStatus
	if topo, err := topology.Open(ctx, js); err == nil {
		fleet, _ = workers.ReadFleet(ctx, topo.Workers)
	}
	return runstate.SpooledNotes(p, fleet)
}
