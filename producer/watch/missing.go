package watch

import (
	"fmt"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"time"
)

// missingResults tracks, for Wait, the jobs reported ended (a terminal
// event that does not say the result was spooled) whose result is not in
// the store, and calls Watcher.OnMissing once for each that stays so for
// Watcher.ResultGrace. The times are this process's clock: when it saw
// the event, not when the event says it happened.
type missingResults struct {
	w      *Watcher
	grace  time.Duration
	since  map[string]time.Time
	told   map[string]bool
	states map[string]*runstate.JobState
}

func (w *Watcher) missingResults(states map[string]*runstate.JobState) *missingResults {
	grace := w.ResultGrace
	if grace <= 0 {
		grace = DefaultResultGrace
	}
	m := &missingResults{w: w, grace: grace, since: map[string]time.Time{}, told: map[string]bool{}, states: states}
	now := time.Now()
	for _, st := range states {
		m.seen(st, now) // reported by the replayed events
	}
	return m
}

// seen notes st's state after a change at now.
func (m *missingResults) seen(st *runstate.JobState, now time.Time) {
	if m.w.OnMissing == nil || m.w.Store == nil {
		return
	}
	id := st.Job.ID
	if !st.Reported() || st.Spooled {
		delete(m.since, id)
		return
	}
	if _, ok := m.since[id]; !ok {
		m.since[id] = now
	}
}

// check calls OnMissing for the jobs whose result is overdue at now.
func (m *missingResults) check(now time.Time) {
	for id, t := range m.since {
		st := m.states[id]
		if !st.Reported() || st.Spooled {
			delete(m.since, id)
			continue
		}
		if m.told[id] || now.Sub(t) < m.grace {
			continue
		}
		m.told[id] = true
		m.w.OnMissing(st, m.grace)
	}
}

// MissingResultNote says, in one sentence for a person, that the job st
// was reported ended but its result is not in the store named store (as
// the command was given it, redacted) after waiting after: the usual
// cause is a worker that writes its results to another store.
func MissingResultNote(st *runstate.JobState, store string, after time.Duration) string {
	who := "its worker"
	if st.Worker != "" {
		who = "worker " + st.Worker
	}
	return fmt.Sprintf("job %s (%s on %s) was reported %s by %s, but after %s its result is not in the store this command reads (%s): "+
		"the worker may write its results to another store; compare its --store (BENCHFLEET_STORE) with this one",
		st.Job.ID, st.Job.Model, st.Job.Pool, st.Kind, who, after, store)
}
