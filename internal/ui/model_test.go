package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

func TestClipCutsAtAWord(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"run cancelled before the job started (removed from the queue)", 60, "run cancelled before the job started (removed from the…"},
		{"run cancelled before the job started (removed from the queue)", 120, "run cancelled before the job started (removed from the queue)"},
		{"one two, three", 12, "one two…"},
		{"aaaaaaaaaaaaaaaaaaaa", 8, "aaaaaaa…"},
		{"ünïcödé wörds hère", 10, "ünïcödé…"},
		{"first line\nsecond line", 40, "first line…"},
		{"exactly ten", 11, "exactly ten"},
	} {
		if got := clip(c.in, c.n); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if got := clip(c.in, c.n); len([]rune(got)) > c.n {
			t.Errorf("clip(%q, %d) = %q: longer than %d", c.in, c.n, got, c.n)
		}
	}
}

func TestPlural(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    any
		want string
	}{
		{0, "0 workers"}, {1, "1 worker"}, {2, "2 workers"}, {int64(1), "1 worker"}, {uint64(3), "3 workers"},
	} {
		if got := plural(c.n, "worker"); got != c.want {
			t.Errorf("plural(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}

// The gate column says cancelled of a cancelled job and unfinished of a job
// that never ended in a run that is over, where the gate says failed.
func TestGateTxt(t *testing.T) {
	t.Parallel()
	res := func(st protocol.Status) *runstate.JobState {
		return &runstate.JobState{Result: &protocol.Result{Status: st}}
	}
	for _, c := range []struct {
		name    string
		js      *runstate.JobState
		v       gate.Verdict
		runOver bool
		want    string
	}{
		{"cancelled", res(protocol.StatusCancelled), gate.VerdictFailed, true, "cancelled"},
		{"failed", res(protocol.StatusFailed), gate.VerdictFailed, false, "failed"},
		{"regression", res(protocol.StatusPassed), gate.VerdictRegression, false, "regression"},
		{"dead letter", &runstate.JobState{Kind: protocol.EventDead}, gate.VerdictFailed, false, "failed"},
		{"never ended, run over", &runstate.JobState{Kind: protocol.EventClaimed}, gate.VerdictFailed, true, "unfinished"},
		{"still running", &runstate.JobState{Kind: protocol.EventClaimed}, gate.VerdictFailed, false, ""},
		{"result awaited", &runstate.JobState{Kind: protocol.EventPassed}, gate.VerdictFailed, true, ""},
	} {
		if got := gateTxt(c.js, c.v, c.runOver); got != c.want {
			t.Errorf("%s: gateTxt = %q, want %q", c.name, got, c.want)
		}
	}
}

// A job without a result shows the loop and warmup counts and labels its
// manifest cell records.
func TestSpecFromCell(t *testing.T) {
	t.Parallel()
	j := &protocol.Job{Run: "r1", Pool: "n150", Runner: "forge",
		Benchmark: protocol.Benchmark{Test: "forge/test/bench.py::test_x[a b]", Model: "resnet50", BatchSize: 8, LoopCount: 64, WarmupCount: 16, DataFormat: "bfloat16"},
		Source: protocol.Source{Repo: "acme/x", Commit: "abc", Branch: "feature, \"odd\"",
			Wheels: []protocol.Wheel{{URL: "builds/sha256/aa/x.whl", SHA256: "aa"}}},
		Labels: map[string]string{"team": "vision", "note": "two words \"quoted\""}}
	m := &protocol.RunManifest{Run: "r1", Priority: protocol.PriorityHigh}
	sp := specOf(m, &runstate.JobState{Job: protocol.ManifestJob{ID: "j1", Cell: j.Cell()}})
	want := jobSpec{Priority: protocol.PriorityHigh, Loops: 64, Warmup: 16, Labels: []string{`note=two words "quoted"`, "team=vision"}}
	if fmt.Sprint(sp) != fmt.Sprint(want) {
		t.Errorf("spec from the cell %q:\n got %+v\nwant %+v", j.Cell(), sp, want)
	}
	r := &protocol.Result{Benchmark: protocol.Benchmark{LoopCount: 5, WarmupCount: 2}, Labels: map[string]string{"i": "0"}}
	sp = specOf(m, &runstate.JobState{Job: protocol.ManifestJob{Cell: j.Cell()}, Result: r})
	if want := (jobSpec{Priority: protocol.PriorityHigh, Loops: 5, Warmup: 2, Labels: []string{"i=0"}}); fmt.Sprint(sp) != fmt.Sprint(want) {
		t.Errorf("spec from the result: got %+v, want %+v", sp, want)
	}
	if sp := specOf(m, &runstate.JobState{}); sp.Loops != 0 || sp.Labels != nil {
		t.Errorf("spec of a job with neither cell nor result: %+v", sp)
	}
}

// A board's done and failures come from its stored results of the window,
// so they do not start again at zero when its worker does; results read
// once are not read again.
func TestBoardTallyCountsStoredResults(t *testing.T) {
	t.Parallel()
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	put := func(run, job, worker, dev string, st protocol.Status, created, finished time.Time) {
		t.Helper()
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: job, Run: run, RunCreatedAt: created, Pool: "sim", Runner: "sim",
			Status: st, Attempt: 1, StartedAt: finished.Add(-time.Second), FinishedAt: finished,
			Worker: protocol.WorkerRef{ID: worker}, Device: protocol.DeviceRef{ID: dev},
			Benchmark: protocol.Benchmark{Model: "m", BatchSize: 1, LoopCount: 1, WarmupCount: 1, DataFormat: "bfloat16"}}
		if st != protocol.StatusPassed {
			r.Error = &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "x"}
		}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	put("r1", "j1", "w1", "d0", protocol.StatusPassed, now.Add(-time.Hour), now.Add(-time.Hour))
	put("r1", "j2", "w1", "d0", protocol.StatusFailed, now.Add(-time.Hour), now.Add(-time.Hour))
	put("r1", "j3", "w1", "d1", protocol.StatusCancelled, now.Add(-time.Hour), now.Add(-time.Hour))
	put("r2", "j4", "w2", "d0", protocol.StatusTimeout, now.Add(-time.Minute), now.Add(-time.Minute))
	// Before the window: not counted.
	put("r0", "j5", "w1", "d0", protocol.StatusFailed, now.Add(-30*time.Hour), now.Add(-29*time.Hour))
	// A run created days ago, still going: counted when the tally is told
	// to look back that far.
	put("r3", "j6", "w1", "d1", protocol.StatusError, now.Add(-72*time.Hour), now.Add(-2*time.Hour))

	var tally boardTally
	got, err := tally.count(t.Context(), store, now, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[boardKey]boardCounts{{"w1", "d0"}: {Done: 2, Failed: 1}, {"w1", "d1"}: {Done: 1}, {"w2", "d0"}: {Done: 1, Failed: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts: got %v, want %v", got, want)
	}
	got, err = tally.count(t.Context(), store, now, now.Add(-72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if c := got[boardKey{"w1", "d1"}]; c != (boardCounts{Done: 2, Failed: 1}) {
		t.Errorf("w1/d1 looking back to a run 3 days old: %+v, want 2 done, 1 failed", c)
	}
	// Results already read are remembered: a read again would see this
	// (unreadable) overwrite.
	key := storage.ResultKey(now.Add(-time.Hour), "r1", "j1")
	if err := store.Put(t.Context(), key, strings.NewReader("not json")); err != nil {
		t.Fatal(err)
	}
	put("r2", "j7", "w2", "d0", protocol.StatusPassed, now.Add(-time.Minute), now)
	got, err = tally.count(t.Context(), store, now, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got[boardKey{"w1", "d0"}]; c != (boardCounts{Done: 2, Failed: 1}) {
		t.Errorf("w1/d0 read again: %+v", c)
	}
	if c := got[boardKey{"w2", "d0"}]; c != (boardCounts{Done: 2, Failed: 1}) {
		t.Errorf("w2/d0 with a new result: %+v, want 2 done, 1 failed", c)
	}
}
