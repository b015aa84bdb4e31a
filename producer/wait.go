package producer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// JobState is the latest known state of one job of a run. Events say how a
// job is getting on; only its stored result says how it ended (any
// producer may publish an event, only workers write results).
type JobState struct {
	Job     protocol.ManifestJob
	Kind    protocol.EventKind // latest event kind ("" = not seen yet)
	Phase   string
	Attempt int
	Worker  string
	Device  string
	Message string
	Updated time.Time
	// Spooled is true when the job's terminal event said its worker
	// spooled the result locally (protocol.Event.Spooled): the job is over
	// and acked, its result reaches the store when that spool uploads it.
	Spooled bool
	// Result is the job's stored result, read from the store at the key the
	// manifest gives (never at a key an event names); nil until found.
	Result *protocol.Result
	// Retried says why earlier attempts were handed back, oldest first:
	// each retrying event's attempt, board and message (a hang, a board
	// reset), also once the job has a result.
	Retried []string
	// requeuedAfter is the attempt of the dead letter's result a re-queue
	// (`dlq retry`) set aside: that result, still in the store until the
	// new attempt's replaces it, no longer ends the job (0: none).
	requeuedAfter int
}

// accepts reports whether r, read from the store, is the job's result now:
// not a dead letter's result that a re-queue set aside.
func (s *JobState) accepts(r *protocol.Result) bool {
	return r != nil && !(r.DeadLettered() && r.Attempt <= s.requeuedAfter)
}

// Terminal reports whether the job has ended: its result is stored (a
// dead-lettered job's is its dead letter's error result), or a dead event
// said it was dead-lettered before that result was read; it never counts
// as passed.
func (s *JobState) Terminal() bool { return s.Result != nil || s.Kind == protocol.EventDead }

// Status is the job's verdict: the stored result's status, error for a
// dead-lettered job, "" while neither.
func (s *JobState) Status() protocol.Status {
	switch {
	case s.Result != nil:
		return s.Result.Status
	case s.Kind == protocol.EventDead:
		return protocol.StatusError
	}
	return ""
}

// OnBoard reports whether the job's latest event says a board is working on
// it (claimed, or a phase or log line since).
func (s *JobState) OnBoard() bool {
	return s.Kind == protocol.EventClaimed || s.Kind == protocol.EventPhase || s.Kind == protocol.EventLog
}

// Reported reports whether an event said the job ended while its result is
// not (yet) in the store: spooled on the worker, or a forged event.
func (s *JobState) Reported() bool {
	return s.Result == nil && s.Kind.Terminal() && s.Kind != protocol.EventDead
}

// Counts are the jobs of a run (or a pool) by state.
type Counts struct {
	// Failed counts jobs that ended without passing, except cancelled ones.
	Total, Queued, Running, Passed, Failed, Cancelled int
	// Recording counts jobs whose board has since claimed another job:
	// their run ended and their result is being stored (a slot claims its
	// next job before it records the last one).
	Recording int
	// Spooled counts jobs whose result is spooled on their worker and not
	// in the store yet (JobState.Spooled); they are not done until it is.
	Spooled int
}

// Done is the number of ended jobs.
func (c Counts) Done() int { return c.Passed + c.Failed + c.Cancelled }

// Progress summarizes a run's jobs. A confirmation repeat (Job.Repeat > 0)
// is an attempt of its original's job, not a job: All and ByPool count
// the jobs without their repeats, Repeats the repeats.
type Progress struct {
	Run    string
	All    Counts
	ByPool map[string]Counts
	// Repeats counts the run's confirmation repeats (zero when it has none).
	Repeats Counts
	// SpooledOn counts the Spooled jobs by worker id.
	SpooledOn map[string]int
	// Last is the job whose event arrived last (nil before any).
	Last *JobState
}

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
	OnMissing func(st *JobState, after time.Duration)
	// OnOutage, if not nil, is called by Wait when the store or NATS
	// stops or starts answering it (Outage.String says it in one line).
	// Wait goes on waiting.
	OnOutage func(Outage)
}

// initial is the state of every job before any event is read.
func (w *Watcher) initial() map[string]*JobState {
	states := map[string]*JobState{}
	for _, j := range w.Manifest.Jobs {
		states[j.ID] = &JobState{Job: j}
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
func (w *Watcher) scanResults(ctx context.Context, states map[string]*JobState, changed func(*JobState, *protocol.Result)) error {
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
		if st.accepts(r) {
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
func (w *Watcher) Wait(ctx context.Context, onUpdate func(Progress)) (map[string]*JobState, error) {
	run := w.Manifest.Run
	states := w.initial()
	remaining := len(states)
	// live: the stored results and events have been read, so progress
	// reports the run's current state (before, a finished run would first
	// show the one result read so far).
	live := false
	// change applies fn to st and keeps remaining in step.
	change := func(st *JobState, fn func()) {
		was := st.Terminal()
		fn()
		switch now := st.Terminal(); {
		case !was && now:
			remaining--
		case was && !now:
			remaining++ // a dead job re-queued by dlq retry
		}
		if onUpdate != nil && live {
			onUpdate(progress(run, states, st))
		}
	}
	setResult := func(st *JobState, r *protocol.Result) { change(st, func() { st.Result = r }) }
	out := &outageTracker{on: w.OnOutage}
	// scan lists the run's results once; a failure that is not an outage
	// is returned.
	scan := func() error {
		cctx, cancel := callCtx(ctx, ScanTimeout)
		err := w.scanResults(cctx, states, setResult)
		cancel()
		out.store(ctx, err)
		if storageOutage(ctx, err) {
			return nil
		}
		return err
	}
	// lookup reads the result of a job reported ended.
	lookup := func(st *JobState) {
		cctx, cancel := callCtx(ctx, CallTimeout)
		r, err := w.readResult(cctx, st.Job.ID)
		cancel()
		out.store(ctx, err)
		if err == nil && st.accepts(r) {
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
				onUpdate(progress(run, states, nil))
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
		onUpdate(progress(run, states, nil))
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
			change(st, func() { apply(st, e) })
			if st.Reported() {
				// The worker stores the result before its terminal event.
				lookup(st)
			}
			missing.seen(st, time.Now())
		}
	}
	return states, nil
}

// apply records an event. Events move a job along (claimed, phases) and
// may say it ended, but only a stored result or a dead letter ends it.
func apply(st *JobState, e *protocol.Event) {
	if e.Kind == protocol.EventRetrying && e.Message != "" {
		st.Retried = append(st.Retried, fmt.Sprintf("attempt %d on %s/%s: %s", e.Attempt, e.Worker, e.Device, e.Message))
	}
	if st.Result != nil {
		if !requeues(st.Result, e) {
			return // the result is final (write-once)
		}
		// The dead letter's result is set aside: the job is dead, and this
		// re-queue revives it below; the new attempt's result replaces it.
		st.requeuedAfter, st.Kind, st.Result = st.Result.Attempt, protocol.EventDead, nil
	}
	// A dead job is only revived by a deliberate re-queue (a new claim or
	// queued event); late events of an earlier attempt do not undo it.
	if st.Kind == protocol.EventDead && e.Kind != protocol.EventQueued && e.Kind != protocol.EventClaimed {
		return
	}
	// The submitter's "queued" event can reach the stream after a fast
	// worker's "claimed" (both are published asynchronously): it does not
	// move a running job back to the queue. (A deliberate re-queue follows
	// a dead letter, handled above.)
	if e.Kind == protocol.EventQueued && st.OnBoard() {
		return
	}
	// A job reported ended stays reported while its result is awaited.
	if st.Reported() && !e.Kind.Terminal() && e.Kind != protocol.EventQueued && e.Kind != protocol.EventClaimed {
		return
	}
	st.Kind = e.Kind
	st.Updated = e.Time
	if e.Attempt > 0 {
		st.Attempt = e.Attempt
	}
	if e.Worker != "" {
		st.Worker = e.Worker
	}
	if e.Device != "" {
		st.Device = e.Device
	}
	switch e.Kind {
	case protocol.EventPhase:
		st.Phase = e.Phase
	case protocol.EventClaimed:
		st.Phase = ""
	case protocol.EventRetrying:
		st.Message = e.Message
	}
	if e.Kind.Terminal() {
		st.Message = e.Message
	}
	st.Spooled = e.Spooled()
}

// requeues reports whether e re-queues the job whose stored result is r:
// r is a dead letter's result and e the queued event of `dlq retry` after
// it, or a claim of a later attempt.
func requeues(r *protocol.Result, e *protocol.Event) bool {
	if !r.DeadLettered() {
		return false
	}
	return (e.Kind == protocol.EventQueued && e.Time.After(r.FinishedAt)) || (e.Kind == protocol.EventClaimed && e.Attempt > r.Attempt)
}

func progress(run string, states map[string]*JobState, last *JobState) Progress {
	p := Progress{Run: run, ByPool: map[string]Counts{}, SpooledOn: map[string]int{}, Last: last}
	// A board runs one job at a time: of the jobs shown running on one
	// board, only the one it heard from last is.
	type board struct{ worker, device string }
	newest := map[board]*JobState{}
	for _, st := range states {
		if !st.Terminal() && st.OnBoard() && st.Device != "" {
			k := board{st.Worker, st.Device}
			if n := newest[k]; n == nil || st.Updated.After(n.Updated) {
				newest[k] = st
			}
		}
	}
	for _, st := range states {
		superseded := newest[board{st.Worker, st.Device}] != st
		if st.Job.Repeat > 0 {
			if count(&p.Repeats, st, superseded) {
				p.SpooledOn[st.Worker]++
			}
			continue
		}
		c := p.ByPool[st.Job.Pool]
		count(&c, st, superseded)
		if count(&p.All, st, superseded) {
			p.SpooledOn[st.Worker]++
		}
		p.ByPool[st.Job.Pool] = c
	}
	return p
}

// count adds st to c and says whether it counted st as spooled;
// superseded says another job of st's board was heard from later (st is
// being recorded, not running).
func count(c *Counts, st *JobState, superseded bool) (spooled bool) {
	c.Total++
	switch {
	case st.Status() == protocol.StatusPassed:
		c.Passed++
	case st.Status() == protocol.StatusCancelled:
		c.Cancelled++
	case st.Terminal():
		c.Failed++
	case st.Reported() && st.Spooled:
		c.Spooled++
		return true
	case st.OnBoard() && st.Device != "" && superseded:
		c.Recording++
	case st.OnBoard() || st.Reported():
		c.Running++
	default:
		c.Queued++
	}
	return false
}

// Ended says every job of the run and every confirmation repeat has ended.
func (p Progress) Ended() bool {
	return p.All.Done() == p.All.Total && p.Repeats.Done() == p.Repeats.Total
}

// Unfinished counts the jobs and confirmation repeats that have not ended.
func (p Progress) Unfinished() int {
	return p.All.Total - p.All.Done() + p.Repeats.Total - p.Repeats.Done()
}

// Sorted returns the states in manifest order.
func Sorted(m *protocol.RunManifest, states map[string]*JobState) []*JobState {
	out := make([]*JobState, 0, len(states))
	for _, j := range m.Jobs {
		if st, ok := states[j.ID]; ok {
			out = append(out, st)
		}
	}
	if len(out) < len(states) {
		sort.Slice(out, func(i, k int) bool { return out[i].Job.ID < out[k].Job.ID })
	}
	return out
}

// Snapshot returns the current state of every job of the run: its stored
// results and the events stored so far, without waiting for more.
func (w *Watcher) Snapshot(ctx context.Context) (map[string]*JobState, error) {
	states := w.initial()
	if err := w.scanResults(ctx, states, func(st *JobState, r *protocol.Result) { st.Result = r }); err != nil {
		return states, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	if w.JS == nil {
		return states, nil // results only (NATS not reachable)
	}
	_, err := readStored(ctx, w.JS, protocol.StreamEvents, []string{protocol.RunEventsFilter(w.Manifest.Run)}, 1, w.Ephemeral, func(m jetstream.Msg) {
		if e, err := protocol.DecodeEvent(m.Data()); err == nil && protocol.TrustedEvent(m.Subject(), e.Kind) {
			if st, ok := states[e.Job]; ok {
				apply(st, e)
			}
		}
	})
	if err != nil {
		return states, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	return states, nil
}

// ProgressOf summarizes the states of a run's jobs: its confirmation
// repeats are attempts of their original's job, counted apart (Repeats), so
// a run of 1 job confirmed twice is 1 job, 1/1 done.
func ProgressOf(m *protocol.RunManifest, states map[string]*JobState) Progress {
	return progress(m.Run, states, nil)
}

// WatchService runs sw (its Workers from js's bench-workers) until the
// returned stop is called: it checks the fleet once before it returns,
// then watches in a goroutine that stop ends and waits for. A fleet that
// cannot be opened is no watch (it is a hint): stop does nothing then.
func WatchService(ctx context.Context, js jetstream.JetStream, sw *ServiceWatch) (stop func()) {
	// A JetStream that does not answer soon is no watch: the wait goes on.
	octx, cancelOpen := callCtx(ctx, CallTimeout)
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
func SpooledReport(ctx context.Context, js jetstream.JetStream, p Progress) []string {
	if p.All.Spooled == 0 && p.Repeats.Spooled == 0 {
		return nil
	}
	var fleet []protocol.WorkerStatus
	if topo, err := topology.Open(ctx, js); err == nil {
		fleet, _ = ReadFleet(ctx, topo.Workers)
	}
	return SpooledNotes(p, fleet)
}

// String is the progress in one line, e.g. "3/5 done (2 passed, 1
// failed), 1 running, 1 queued | n150 1/2 sim 2/3 (1 failed)".
func (p Progress) String() string {
	c := p.All
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d done (%d passed, %d failed", c.Done(), c.Total, c.Passed, c.Failed)
	if c.Cancelled > 0 {
		fmt.Fprintf(&b, ", %d cancelled", c.Cancelled)
	}
	fmt.Fprintf(&b, "), %d running, %d queued", c.Running, c.Queued)
	if c.Recording > 0 {
		fmt.Fprintf(&b, ", %d recording", c.Recording)
	}
	if r := p.Repeats; r.Total > 0 {
		fmt.Fprintf(&b, "; confirmation repeats %d/%d done", r.Done(), r.Total)
		if n := r.Running + r.Recording + r.Spooled; n > 0 {
			fmt.Fprintf(&b, ", %d running", n)
		}
		if r.Queued > 0 {
			fmt.Fprintf(&b, ", %d queued", r.Queued)
		}
	}
	for _, note := range SpooledNotes(p, nil) {
		b.WriteString("; " + note)
	}
	if len(p.ByPool) > 1 {
		pools := make([]string, 0, len(p.ByPool))
		for k := range p.ByPool {
			pools = append(pools, k)
		}
		sort.Strings(pools)
		b.WriteString(" |")
		for _, k := range pools {
			pc := p.ByPool[k]
			fmt.Fprintf(&b, " %s %d/%d", k, pc.Done(), pc.Total)
			if pc.Failed > 0 {
				fmt.Fprintf(&b, " (%d failed)", pc.Failed)
			}
		}
	}
	return b.String()
}
