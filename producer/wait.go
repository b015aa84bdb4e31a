package producer

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// JobState is the latest known state of one job of a run.
type JobState struct {
	Job           protocol.ManifestJob
	Kind          protocol.EventKind // latest event kind ("" = not seen yet)
	Status        protocol.Status    // on terminal events
	Phase         string
	Attempt       int
	Worker        string
	Device        string
	Message       string
	ResultKey     string
	SamplesPerSec float64
	PCC           float64
	Updated       time.Time
}

// Terminal reports whether the job has ended.
func (s *JobState) Terminal() bool { return s.Kind.Terminal() }

// Counts are the jobs of a run (or a pool) by state.
type Counts struct {
	// Failed counts jobs that ended without passing, except cancelled ones.
	Total, Queued, Running, Passed, Failed, Cancelled int
}

// Done is the number of ended jobs.
func (c Counts) Done() int { return c.Passed + c.Failed + c.Cancelled }

// Progress summarizes a run's jobs.
type Progress struct {
	Run    string
	All    Counts
	ByPool map[string]Counts
	// Last is the job whose event arrived last (nil before any).
	Last *JobState
}

// Watcher follows the events of one run from the start of BENCH_EVENTS, so
// a late waiter still sees everything.
type Watcher struct {
	JS       jetstream.JetStream
	Manifest *protocol.RunManifest
	// Stored are results already in the store, by job. Their jobs count as
	// ended from the start, so waiting on a run older than the events'
	// retention still ends.
	Stored map[string]*protocol.Result
}

// initial is the state of every job before any event is read.
func (w *Watcher) initial() map[string]*JobState {
	states := map[string]*JobState{}
	for _, j := range w.Manifest.Jobs {
		st := &JobState{Job: j}
		if r, ok := w.Stored[j.ID]; ok && r != nil {
			apply(st, &protocol.Event{Kind: terminalKind(r.Status), Status: r.Status, Time: r.FinishedAt,
				Attempt: r.Attempt, Worker: r.Worker.ID, Device: r.Device.ID,
				SamplesPerSec: r.Measurements.SamplesPerSec, PCC: r.PCC.Value})
			if r.Error != nil {
				st.Message = r.Error.Message
			}
		}
		states[j.ID] = st
	}
	return states
}

// terminalKind is the terminal event kind of a result status.
func terminalKind(s protocol.Status) protocol.EventKind {
	switch s {
	case protocol.StatusPassed:
		return protocol.EventPassed
	case protocol.StatusCancelled:
		return protocol.EventCancelled
	default:
		return protocol.EventFailed
	}
}

// Wait follows the run until every job of the manifest has ended or ctx
// ends (then it returns the states so far and ctx's error). onUpdate, if
// not nil, is called after each event with the new progress.
func (w *Watcher) Wait(ctx context.Context, onUpdate func(Progress)) (map[string]*JobState, error) {
	states := w.initial()
	// Replay every stored event first, and only then judge whether the run
	// has ended: a job dead-lettered and later re-queued by `dlq retry` is
	// terminal half way through the replay.
	last, err := w.catchUp(ctx, states)
	if err != nil {
		return states, err
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{protocol.RunEventsFilter(w.Manifest.Run)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	}
	cons, err := w.JS.OrderedConsumer(ctx, protocol.StreamEvents, cfg)
	if err != nil {
		return states, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	events := make(chan *protocol.Event, 256)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		e, err := protocol.DecodeEvent(m.Data())
		if err != nil {
			return
		}
		select {
		case events <- e:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return states, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	defer cc.Stop()
	remaining := 0
	for _, st := range states {
		if !st.Terminal() {
			remaining++
		}
	}
	if onUpdate != nil {
		onUpdate(progress(w.Manifest.Run, states, nil))
	}
	for remaining > 0 {
		select {
		case <-ctx.Done():
			return states, ctx.Err()
		case e := <-events:
			st, ok := states[e.Job]
			if !ok {
				continue
			}
			wasTerminal := st.Terminal()
			apply(st, e)
			switch {
			case !wasTerminal && st.Terminal():
				remaining--
			case wasTerminal && !st.Terminal():
				remaining++ // a dead job re-queued by dlq retry
			}
			if onUpdate != nil {
				onUpdate(progress(w.Manifest.Run, states, st))
			}
		}
	}
	return states, nil
}

func apply(st *JobState, e *protocol.Event) {
	// A terminal state is only left by a deliberate re-queue (a new claim
	// or queued event after a dead letter); late events of an earlier
	// attempt (e.g. a phase from a worker that lost the job) do not undo it.
	if st.Terminal() && !e.Kind.Terminal() {
		revived := st.Kind == protocol.EventDead && (e.Kind == protocol.EventQueued || e.Kind == protocol.EventClaimed)
		if !revived {
			return
		}
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
		st.Status = e.Status
		if e.Kind == protocol.EventDead {
			st.Status = protocol.StatusError
		}
		st.Message = e.Message
		st.ResultKey = e.Result
		st.SamplesPerSec = e.SamplesPerSec
		st.PCC = e.PCC
	}
}

func progress(run string, states map[string]*JobState, last *JobState) Progress {
	p := Progress{Run: run, ByPool: map[string]Counts{}, Last: last}
	for _, st := range states {
		c := p.ByPool[st.Job.Pool]
		c.Total++
		p.All.Total++
		switch {
		case st.Kind == protocol.EventPassed:
			c.Passed++
			p.All.Passed++
		case st.Kind == protocol.EventCancelled:
			c.Cancelled++
			p.All.Cancelled++
		case st.Terminal():
			c.Failed++
			p.All.Failed++
		case st.Kind == protocol.EventClaimed || st.Kind == protocol.EventPhase || st.Kind == protocol.EventLog:
			c.Running++
			p.All.Running++
		default:
			c.Queued++
			p.All.Queued++
		}
		p.ByPool[st.Job.Pool] = c
	}
	return p
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

// catchUp applies the run's stored events to states and returns the stream
// sequence of the last one (0 when none).
func (w *Watcher) catchUp(ctx context.Context, states map[string]*JobState) (uint64, error) {
	last, err := ReadStored(ctx, w.JS, protocol.StreamEvents, []string{protocol.RunEventsFilter(w.Manifest.Run)}, func(m jetstream.Msg) {
		if e, err := protocol.DecodeEvent(m.Data()); err == nil {
			if st, ok := states[e.Job]; ok {
				apply(st, e)
			}
		}
	})
	if err != nil {
		return last, fmt.Errorf("watch run %s: %w", w.Manifest.Run, err)
	}
	return last, nil
}

// Snapshot returns the current state of every job of the run: the events
// stored so far, without waiting for more.
func (w *Watcher) Snapshot(ctx context.Context) (map[string]*JobState, error) {
	states := w.initial()
	if _, err := w.catchUp(ctx, states); err != nil {
		return states, err
	}
	return states, nil
}

// ProgressOf summarizes the states of a run's jobs.
func ProgressOf(m *protocol.RunManifest, states map[string]*JobState) Progress {
	return progress(m.Run, states, nil)
}
