package runstate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
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

// Accepts reports whether r, read from the store, is the job's result now:
// not a dead letter's result that a re-queue set aside.
func (s *JobState) Accepts(r *protocol.Result) bool {
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

// ApplyEvent records an event. Events move a job along (claimed, phases) and
// may say it ended, but only a stored result or a dead letter ends it.
func ApplyEvent(st *JobState, e *protocol.Event) {
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

// ProgressFrom summarizes states, the jobs of run, with last the job whose
// event arrived last (nil: none): what a waiter reports after each event.
func ProgressFrom(run string, states map[string]*JobState, last *JobState) Progress {
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

// ProgressOf summarizes the states of a run's jobs: its confirmation
// repeats are attempts of their original's job, counted apart (Repeats), so
// a run of 1 job confirmed twice is 1 job, 1/1 done (what `runs list`,
// `runs show` and the dashboard count).
func ProgressOf(m *protocol.RunManifest, states map[string]*JobState) Progress {
	return ProgressFrom(m.Run, states, nil)
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

// Activity says what a job that has not ended is doing: "running" (with
// its phase, "running: timing"), "retrying", "queued", "ending (result
// awaited)" or "spooled on worker W (result not in the store yet)"; ""
// once it has ended.
func (s *JobState) Activity() string {
	switch {
	case s.Terminal():
		return ""
	case s.Reported() && s.Spooled:
		return "spooled on worker " + s.Worker + " (result not in the store yet)"
	case s.Reported():
		return "ending (result awaited)"
	case s.Kind == protocol.EventRetrying:
		return "retrying"
	case s.Kind == protocol.EventPhase && s.Phase != "":
		return "running: " + s.Phase
	case s.OnBoard():
		return "running"
	}
	return "queued"
}

// RunJobs is how many jobs run m has: its confirmation repeats are
// attempts of their original's job, not jobs.
func RunJobs(m *protocol.RunManifest) int {
	return len(WithoutRepeats(m).Jobs)
}
