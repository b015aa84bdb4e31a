package submit_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// schedJob is a sim job of model m at priority prio.
func schedJob(t *testing.T, run, m string, prio protocol.Priority) *protocol.Job {
	t.Helper()
	spec := submit.JobSpec{Pool: "sim", Runner: "sim", Priority: string(prio), Benchmark: submit.BenchmarkSpec{Model: m, BatchSize: 1, LoopCount: 1}}
	j, err := spec.Job(run, submit.SourceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func models(jobs []*protocol.Job) string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Benchmark.Model)
	}
	return strings.Join(out, " ")
}

// Within each priority (high first): no history first, then the longest
// expected; ties keep matrix order.
func TestOrderByExpected(t *testing.T) {
	t.Parallel()
	const hi, no, lo = protocol.PriorityHigh, protocol.PriorityNormal, protocol.PriorityLow
	type job struct {
		model string
		prio  protocol.Priority
		d     time.Duration // 0: no history
	}
	for _, tc := range []struct {
		name    string
		jobs    []job
		want    string
		without int
	}{
		{"empty", nil, "", 0},
		{"longest first", []job{{"a", no, 1 * time.Minute}, {"b", no, 40 * time.Minute}, {"c", no, 3 * time.Minute}}, "b c a", 0},
		{"no history first", []job{{"a", no, 1 * time.Minute}, {"new", no, 0}, {"b", no, 40 * time.Minute}}, "new b a", 1},
		{"ties keep matrix order", []job{{"a", no, time.Minute}, {"b", no, time.Minute}, {"x", no, 0}, {"y", no, 0}}, "x y a b", 2},
		{"within each priority", []job{{"l", lo, 30 * time.Minute}, {"n1", no, time.Minute}, {"h", hi, time.Minute}, {"n2", no, 20 * time.Minute}, {"h0", hi, 0}},
			"h0 h n2 n1 l", 1},
	} {
		var jobs []*protocol.Job
		expected := map[gate.Series]time.Duration{}
		for _, j := range tc.jobs {
			pj := schedJob(t, "r", j.model, j.prio)
			jobs = append(jobs, pj)
			if j.d > 0 {
				expected[submit.SeriesOfJob(pj)] = j.d
			}
		}
		before := models(jobs)
		got, without := submit.OrderByExpected(jobs, expected)
		if models(got) != tc.want || without != tc.without {
			t.Errorf("%s: order %q with %d without history, want %q with %d", tc.name, models(got), without, tc.want, tc.without)
		}
		if models(jobs) != before {
			t.Errorf("%s: the jobs given were reordered", tc.name)
		}
	}
}

// putHistory stores a passed result of model m for each duration, one run
// each, the last the newest.
func putHistory(t *testing.T, b storage.Bucket, m string, ds ...time.Duration) {
	t.Helper()
	created := time.Now().UTC().Add(-time.Hour)
	for i, d := range ds {
		run := fmt.Sprintf("hist-%s-%d", m, i)
		j := schedJob(t, run, m, protocol.PriorityNormal)
		at := created.Add(time.Duration(i) * time.Minute)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: j.ID, Run: run, RunCreatedAt: at, Pool: j.Pool, Runner: j.Runner,
			Status: protocol.StatusPassed, Attempt: 1, StartedAt: at, FinishedAt: at.Add(d), Benchmark: j.Benchmark}
		if _, err := storage.PutResult(t.Context(), b, r); err != nil {
			t.Fatal(err)
		}
	}
}

// A run over two pools is ordered in both: each pool's series find their
// history (read per pool and model), and the longest expected of either
// pool goes first.
func TestExpectedDurationsOverTwoPools(t *testing.T) {
	t.Parallel()
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	putHistory(t, store, "short", 10*time.Second)
	putHistory(t, store, "long", 50*time.Second)
	other := func(j *protocol.Job) *protocol.Job { j.Pool = "sim-b"; return j }
	created := time.Now().UTC().Add(-time.Hour)
	for m, d := range map[string]time.Duration{"b-mid": 30 * time.Second, "b-longest": 90 * time.Second} {
		j := other(schedJob(t, "hist-b-"+m, m, protocol.PriorityNormal))
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: j.ID, Run: j.Run, RunCreatedAt: created, Pool: j.Pool, Runner: j.Runner,
			Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(d), Benchmark: j.Benchmark}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := index.Compact(t.Context(), store, index.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs := []*protocol.Job{schedJob(t, "two", "short", protocol.PriorityNormal), other(schedJob(t, "two", "b-mid", protocol.PriorityNormal)),
		schedJob(t, "two", "long", protocol.PriorityNormal), other(schedJob(t, "two", "b-longest", protocol.PriorityNormal))}
	expected, err := submit.ExpectedDurations(t.Context(), store, jobs, submit.ScheduleConfig{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(expected) != 4 {
		t.Fatalf("expected durations of %d series, want all 4 of both pools: %v", len(expected), expected)
	}
	ordered, without := submit.OrderByExpected(jobs, expected)
	if got := models(ordered); got != "b-longest long b-mid short" || without != 0 {
		t.Errorf("ordered %q (%d without history), want b-longest long b-mid short", got, without)
	}
}

// Submit with a History publishes longest expected first (the median of
// each series' latest passed attempts; no history first), keeps the
// manifest in matrix order, and says so; without an index, or when the
// read fails, it publishes in matrix order and the submit still succeeds.
func TestSubmitPublishesLongestExpectedFirst(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// short: 10s; long: an old 1s outside the latest 5, then a median of
	// 60s; mid: 30s (an even count, the mean of the middle two).
	putHistory(t, store, "short", 10*time.Second)
	putHistory(t, store, "long", time.Second, 50*time.Second, 60*time.Second, 60*time.Second, 70*time.Second, 80*time.Second)
	putHistory(t, store, "mid", 20*time.Second, 40*time.Second)
	matrix := []string{"short", "mid", "fresh", "long"}

	submitRun := func(run string, cfg submit.ScheduleConfig) (*submit.SubmitResult, string) {
		t.Helper()
		var jobs []*protocol.Job
		for _, m := range matrix {
			jobs = append(jobs, schedJob(t, run, m, protocol.PriorityNormal))
		}
		p := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Store: store, History: store, Schedule: cfg, Log: zerolog.Nop()}
		res, err := p.Submit(t.Context(), submit.Submission{Run: run, Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
		if err != nil {
			t.Fatalf("submit %s: %v", run, err)
		}
		var published []string
		info, err := topo.Jobs.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			m, err := topo.Jobs.GetMsg(t.Context(), seq)
			if err != nil {
				t.Fatal(err)
			}
			var j protocol.Job
			if json.Unmarshal(m.Data, &j) == nil && j.Run == run {
				published = append(published, j.Benchmark.Model)
			}
		}
		var manifest []string
		for _, mj := range res.Manifest.Jobs {
			manifest = append(manifest, mj.Model)
		}
		if !slices.Equal(manifest, matrix) {
			t.Errorf("%s: manifest order %v, want the matrix's %v", run, manifest, matrix)
		}
		return res, strings.Join(published, " ")
	}

	res, order := submitRun("unindexed", submit.ScheduleConfig{})
	if order != strings.Join(matrix, " ") || res.Schedule.ByHistory || !res.Schedule.NoIndex {
		t.Errorf("without an index: published %q, schedule %+v; want matrix order and NoIndex", order, res.Schedule)
	}
	if !strings.Contains(res.Schedule.String(), "4 jobs in matrix order: the store has no results index") {
		t.Errorf("schedule says %q", res.Schedule)
	}

	if _, err := index.Compact(t.Context(), store, index.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	expected, err := submit.ExpectedDurations(t.Context(), store, []*protocol.Job{schedJob(t, "x", "long", protocol.PriorityNormal),
		schedJob(t, "x", "mid", protocol.PriorityNormal)}, submit.ScheduleConfig{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(expected) != 2 || slices.Sorted(func(yield func(time.Duration) bool) {
		for _, d := range expected {
			yield(d)
		}
	})[1] != 60*time.Second {
		t.Errorf("expected durations %v, want long 60s and mid 30s", expected)
	}

	res, order = submitRun("indexed", submit.ScheduleConfig{})
	if order != "fresh long mid short" || !res.Schedule.ByHistory || res.Schedule.WithoutHistory != 1 {
		t.Errorf("with history: published %q, schedule %+v; want fresh long mid short", order, res.Schedule)
	}
	if s := res.Schedule.String(); s != "ordered 4 jobs by expected duration (1 without history first)" {
		t.Errorf("schedule says %q", s)
	}

	// A read that cannot finish (a deadline already past) leaves matrix
	// order with the reason, and the run is submitted.
	res, order = submitRun("timed-out", submit.ScheduleConfig{Timeout: time.Nanosecond})
	if order != strings.Join(matrix, " ") || res.Schedule.ByHistory || res.Schedule.Err == nil || res.Published != len(matrix) {
		t.Errorf("failed read: published %q, schedule %+v, %d published", order, res.Schedule, res.Published)
	}
	if !strings.Contains(res.Schedule.String(), "4 jobs in matrix order: could not read their expected durations") {
		t.Errorf("schedule says %q", res.Schedule)
	}
}
