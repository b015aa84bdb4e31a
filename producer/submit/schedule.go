package submit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// A run ends when its last job ends. Submit with a History publishes a
// run's jobs longest expected first within each priority (a longest-
// processing-time-first schedule), jobs without history first: they are
// the most uncertain, and may be the longest.

// ScheduleConfig bounds the history read that orders a run's jobs.
type ScheduleConfig struct {
	// Recent is how many of a series' latest passed results its expected
	// duration is the median of; 0 is 5.
	Recent int
	// Since is how far back results are read; 0 is 14 days.
	Since time.Duration
	// Timeout bounds the read; 0 is 10 s. A read that takes longer leaves
	// the run in matrix order.
	Timeout time.Duration
}

func (c ScheduleConfig) withDefaults() ScheduleConfig {
	c.Recent = cmp.Or(c.Recent, 5)
	c.Since = cmp.Or(c.Since, 14*24*time.Hour)
	c.Timeout = cmp.Or(c.Timeout, 10*time.Second)
	return c
}

// Schedule says in what order Submit published a run's jobs.
type Schedule struct {
	// ByHistory: longest expected first within each priority, jobs
	// without history first. False: matrix order (no History, a store
	// without an index, or Err).
	ByHistory bool
	// Jobs is the number of jobs ordered; WithoutHistory how many had no
	// passed result in the window.
	Jobs, WithoutHistory int
	// Read is how long the history read took.
	Read time.Duration
	// NoIndex: the store has no results index yet (results compact
	// writes it), so the jobs went out in matrix order.
	NoIndex bool
	// Err is why the history could not be read: the jobs went out in
	// matrix order. A warning, not a failure of the submit.
	Err error
}

// String is one line for a submit's progress output, e.g. "ordered 40
// jobs by expected duration (12 without history first)".
func (s Schedule) String() string {
	switch {
	case s.ByHistory:
		return fmt.Sprintf("ordered %s by expected duration (%d without history first)", runstate.Count(s.Jobs, "job"), s.WithoutHistory)
	case s.NoIndex:
		return fmt.Sprintf("%s in matrix order: the store has no results index to read their expected durations from yet (benchfleet results compact writes it)", runstate.Count(s.Jobs, "job"))
	case s.Err != nil:
		return fmt.Sprintf("%s in matrix order: %v", runstate.Count(s.Jobs, "job"), s.Err)
	}
	return fmt.Sprintf("%s in matrix order", runstate.Count(s.Jobs, "job"))
}

// SeriesOfJob is the series a job's result will belong to (SeriesOf).
func SeriesOfJob(j *protocol.Job) gate.Series { return gate.SeriesFor(j.Benchmark, j.Pool, j.Runner) }

// AttemptDuration is a result's whole attempt, from the slot taking the
// delivery to the runner's return (started_at to finished_at); 0 when
// either time is missing.
func AttemptDuration(r *protocol.Result) time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() || !r.FinishedAt.After(r.StartedAt) {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// ExpectedDurations reads from b the expected attempt duration of each
// series of jobs: the median AttemptDuration of its cfg.Recent latest
// passed results of runs created since now - cfg.Since. A series without
// one is absent. It reads through index.Query (the Parquet index for
// compacted days), one query per (pool, model) pair of the run, or per
// pool when there are more pairs than maxHistoryQueries (historyFilters):
// never the whole store's results, however many pools the run spans.
func ExpectedDurations(ctx context.Context, b storage.Bucket, jobs []*protocol.Job, cfg ScheduleConfig, now time.Time) (map[gate.Series]time.Duration, error) {
	cfg = cfg.withDefaults()
	want := map[gate.Series]bool{}
	for _, j := range jobs {
		want[SeriesOfJob(j)] = true
	}
	var rs []*protocol.Result
	for _, f := range historyFilters(jobs, now.Add(-cfg.Since)) {
		got, _, err := index.Query(ctx, b, f)
		if err != nil {
			return nil, fmt.Errorf("expected durations: %w", err)
		}
		rs = append(rs, got...)
	}
	hist := map[gate.Series][]*protocol.Result{}
	for _, r := range rs {
		if s := gate.SeriesOf(r); want[s] && AttemptDuration(r) > 0 {
			hist[s] = append(hist[s], r)
		}
	}
	out := make(map[gate.Series]time.Duration, len(hist))
	for s, h := range hist {
		// Query returns the oldest run first; the latest attempts count.
		slices.SortStableFunc(h, func(a, b *protocol.Result) int {
			return cmp.Or(a.RunCreatedAt.Compare(b.RunCreatedAt), a.FinishedAt.Compare(b.FinishedAt))
		})
		h = h[max(0, len(h)-cfg.Recent):]
		secs := make([]float64, len(h))
		for i, r := range h {
			secs[i] = AttemptDuration(r).Seconds()
		}
		out[s] = time.Duration(runstate.Median(secs) * float64(time.Second))
	}
	return out, nil
}

// maxHistoryQueries bounds the queries ExpectedDurations makes for a run.
const maxHistoryQueries = 16

// historyFilters are the queries of jobs' history since: one per (pool,
// model) pair, in the order first seen; more pairs than maxHistoryQueries,
// one per pool; more pools than that too, one query of every pool. The
// filters are disjoint: no result matches two.
func historyFilters(jobs []*protocol.Job, since time.Time) []index.Filter {
	type pair struct{ pool, model string }
	var pairs []pair
	var pools []string
	seen, seenPool := map[pair]bool{}, map[string]bool{}
	for _, j := range jobs {
		if p := (pair{j.Pool, j.Benchmark.Model}); !seen[p] {
			seen[p] = true
			pairs = append(pairs, p)
		}
		if !seenPool[j.Pool] {
			seenPool[j.Pool] = true
			pools = append(pools, j.Pool)
		}
	}
	base := index.Filter{Status: protocol.StatusPassed, Since: since}
	var fs []index.Filter
	switch {
	case len(pairs) <= maxHistoryQueries:
		for _, p := range pairs {
			f := base
			f.Pool, f.Model = p.pool, p.model
			fs = append(fs, f)
		}
	case len(pools) <= maxHistoryQueries:
		for _, p := range pools {
			f := base
			f.Pool = p
			fs = append(fs, f)
		}
	default:
		fs = append(fs, base)
	}
	return fs
}

// OrderByExpected returns jobs in publishing order: by priority, highest
// first; within a priority the jobs whose series has no expected duration
// first, then the longest expected first. Ties keep matrix order. It also
// returns how many had none. jobs is not changed.
func OrderByExpected(jobs []*protocol.Job, expected map[gate.Series]time.Duration) ([]*protocol.Job, int) {
	type entry struct {
		j    *protocol.Job
		rank int
		d    time.Duration
		ok   bool
	}
	es := make([]entry, len(jobs))
	without := 0
	for i, j := range jobs {
		d, ok := expected[SeriesOfJob(j)]
		if !ok {
			without++
		}
		es[i] = entry{j: j, rank: priorityRank(j.Priority), d: d, ok: ok}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if a.ok != b.ok {
			if !a.ok {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.d, a.d)
	})
	out := make([]*protocol.Job, len(es))
	for i, e := range es {
		out[i] = e.j
	}
	return out, without
}

func priorityRank(p protocol.Priority) int {
	if i := slices.Index(protocol.Priorities, p); i >= 0 {
		return i
	}
	return len(protocol.Priorities)
}

// schedule orders jobs by the history in p.History, or leaves them in
// matrix order when the store has no index or the read fails (with a
// warning): the order is an optimization, never a reason to fail a submit.
func (p *Submitter) schedule(ctx context.Context, jobs []*protocol.Job) (_ []*protocol.Job, sc Schedule) {
	sc.Jobs = len(jobs)
	if p.History == nil {
		return jobs, sc
	}
	cfg := p.Schedule.withDefaults()
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	defer func() { sc.Read = time.Since(start) }()
	indexed, err := hasIndex(rctx, p.History)
	if err == nil && !indexed {
		sc.NoIndex = true
		return jobs, sc
	}
	var expected map[gate.Series]time.Duration
	if err == nil {
		expected, err = ExpectedDurations(rctx, p.History, jobs, cfg, time.Now())
	}
	if err != nil {
		sc.Err = fmt.Errorf("could not read their expected durations: %w", err)
		p.Log.Warn().Err(err).Msg("jobs go out in matrix order: could not read their expected durations")
		return jobs, sc
	}
	ordered, without := OrderByExpected(jobs, expected)
	sc.ByHistory, sc.WithoutHistory = true, without
	return ordered, sc
}

// hasIndex reports whether b holds any part of the results index.
func hasIndex(ctx context.Context, b storage.Bucket) (bool, error) {
	for _, err := range b.List(ctx, storage.PrefixIndex) {
		if err != nil {
			return false, fmt.Errorf("list the index: %w", err)
		}
		return true, nil
	}
	return false, nil
}
