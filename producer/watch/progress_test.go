package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// A board runs one job at a time. A slot claims its next job before it
// records the last one, so for a moment two jobs of one board look
// running: only the one the board claimed last counts as running, the
// other as recording. Jobs on different boards are each running.
func TestProgressCountsOneRunningJobPerBoard(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := func(id string, kind protocol.EventKind, dev string, at time.Duration) *runstate.JobState {
		return &runstate.JobState{Job: protocol.ManifestJob{ID: id, Pool: "cpu"}, Kind: kind, Worker: "w1", Device: dev, Updated: t0.Add(at)}
	}
	states := map[string]*runstate.JobState{
		"old":    st("old", protocol.EventPhase, "cpu-0", 0),             // its runner returned; being recorded
		"new":    st("new", protocol.EventClaimed, "cpu-0", time.Second), // claimed next on the same board
		"other":  st("other", protocol.EventClaimed, "cpu-1", 0),
		"queued": {Job: protocol.ManifestJob{ID: "queued", Pool: "cpu"}},
		"done":   {Job: protocol.ManifestJob{ID: "done", Pool: "cpu"}, Kind: protocol.EventClaimed, Worker: "w1", Device: "cpu-0", Updated: t0.Add(2 * time.Second), Result: &protocol.Result{Status: protocol.StatusPassed}},
	}
	p := runstate.ProgressFrom("r", states, nil)
	want := runstate.Counts{Total: 5, Queued: 1, Running: 2, Recording: 1, Passed: 1}
	if p.All != want {
		t.Fatalf("counts %+v, want %+v", p.All, want)
	}
	if p.ByPool["cpu"] != want {
		t.Fatalf("pool counts %+v, want %+v", p.ByPool["cpu"], want)
	}
	if got := runstate.RunState(p, false); got != runstate.RunRunning {
		t.Fatalf("run state %v, want running", got)
	}
	// Only recording left: the run is still running, not queued.
	p = runstate.ProgressFrom("r", map[string]*runstate.JobState{"old": states["old"], "new": st("new", protocol.EventClaimed, "cpu-0", time.Second)}, nil)
	if p.All.Recording != 1 || p.All.Running != 1 {
		t.Fatalf("counts %+v, want 1 running and 1 recording", p.All)
	}
}

// A run's confirmation repeats are attempts of its job, not jobs: a run of
// 1 job confirmed twice is 1/1 done, its repeats counted apart, and it is
// running until they have ended (submit --wait, the dashboard's run page).
func TestProgressCountsRepeatsApart(t *testing.T) {
	t.Parallel()
	m, rs := gatetest.RunWithRepeats(time.Now().UTC(), 900, 1000, 1000)
	states := map[string]*runstate.JobState{}
	for _, j := range m.Jobs {
		states[j.ID] = &runstate.JobState{Job: j}
	}
	states["j0"].Result = rs[0]
	states[m.Jobs[1].ID].Result = rs[1]
	states[m.Jobs[2].ID].Kind, states[m.Jobs[2].ID].Worker, states[m.Jobs[2].ID].Device = protocol.EventClaimed, "w2", "d2"
	p := runstate.ProgressOf(m, states)
	if p.All.Total != 1 || p.All.Done() != 1 || p.ByPool["sim"].Total != 1 {
		t.Errorf("counts %+v (sim %+v), want 1 job, done", p.All, p.ByPool["sim"])
	}
	if p.Repeats.Total != 2 || p.Repeats.Done() != 1 || p.Ended() || p.Unfinished() != 1 || runstate.RunState(p, false) != runstate.RunRunning {
		t.Errorf("repeats %+v, ended %v, unfinished %d, state %s; want 1 of 2 done, running", p.Repeats, p.Ended(), p.Unfinished(), runstate.RunState(p, false))
	}
	if s := p.String(); !strings.HasPrefix(s, "1/1 done (1 passed") || !strings.Contains(s, "confirmation repeats 1/2 done, 1 running") {
		t.Errorf("progress %q", s)
	}
	states[m.Jobs[2].ID].Result = rs[2]
	if p := runstate.ProgressOf(m, states); !p.Ended() || runstate.RunState(p, false) != runstate.RunPassed {
		t.Errorf("all ended: %+v, state %s", p, runstate.RunState(p, false))
	}
}
