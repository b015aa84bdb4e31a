package producer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// The read models of the web UI (internal/ui) that the command line does
// not have in this package: the runs list, queue depths, dead letters and a
// series judged point by point.

// RunSummary is one run of ListRuns.
type RunSummary struct {
	Manifest  *protocol.RunManifest
	Cancelled bool
	// Progress and State are from the run's stored results and events;
	// only set for the runs ListRuns looked at (the newest ones).
	Progress *Progress
	State    string
}

// ListRuns returns the runs of the bench-runs bucket, newest first. The
// newest `detail` runs get their Progress and State (a Snapshot each:
// their stored results and events; store may be nil, then only events).
// A manifest that GetManifest refuses (ErrBadManifest) is left out and
// named in a *SkippedRunsError returned with the other runs.
func ListRuns(ctx context.Context, js jetstream.JetStream, runs jetstream.KeyValue, store storage.Bucket, detail int) ([]RunSummary, error) {
	keys, err := runs.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var out []RunSummary
	cancelled := map[string]bool{}
	var names []string
	for k := range keys.Keys() {
		run, what, ok := protocol.ParseRunKey(k)
		switch {
		case ok && what == "cancel":
			cancelled[run] = true
		case ok && what == "manifest":
			names = append(names, run)
		}
	}
	var skipped []error
	for _, run := range names {
		m, err := GetManifest(ctx, runs, run)
		switch {
		case err == nil:
			out = append(out, RunSummary{Manifest: m, Cancelled: cancelled[run]})
		case errors.Is(err, ErrBadManifest):
			skipped = append(skipped, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest.CreatedAt.After(out[j].Manifest.CreatedAt) })
	for i := range out {
		if i >= detail {
			break
		}
		w := &Watcher{JS: js, Manifest: out[i].Manifest, Store: store}
		states, err := w.Snapshot(ctx)
		if err != nil {
			continue
		}
		p := RunProgress(out[i].Manifest, states)
		out[i].Progress = &p
		out[i].State = RunState(p, out[i].Cancelled)
	}
	if skipped != nil {
		return out, &SkippedRunsError{Errs: skipped}
	}
	return out, nil
}

// QueueDepth is one job consumer's backlog.
type QueueDepth struct {
	Pool     string
	Priority protocol.Priority
	// Pending: queued, not yet delivered; InFlight: delivered, not acked.
	Pending, InFlight uint64
}

// ReadQueues returns the backlog of every job consumer that exists
// (pools × priorities, in protocol order).
func ReadQueues(ctx context.Context, js jetstream.JetStream) ([]QueueDepth, error) {
	var out []QueueDepth
	for _, pool := range protocol.Pools {
		for _, prio := range protocol.Priorities {
			c, err := js.Consumer(ctx, protocol.StreamJobs, protocol.ConsumerName(pool, prio))
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("queue %s/%s: %w", pool, prio, err)
			}
			info := c.CachedInfo()
			if fresh, err := c.Info(ctx); err == nil {
				info = fresh
			}
			out = append(out, QueueDepth{Pool: pool, Priority: prio, Pending: info.NumPending, InFlight: uint64(info.NumAckPending)})
		}
	}
	return out, nil
}

// SeriesPoint is one result of a series with the gate's judgement of it.
type SeriesPoint struct {
	Result *protocol.Result
	// Judgement applies the gate's rule to the result against the
	// series' earlier passed results on the baseline branch (the last
	// Window of them), as the gate would have judged it.
	Judgement Judgement
	// OnBaseline says the result is on the gate's baseline branch.
	OnBaseline bool
}

// SeriesPoints returns the results of rs that belong to series s, oldest
// first, each judged by gate (defaults filled by the caller).
func SeriesPoints(rs []*protocol.Result, s Series, gate GateConfig) []SeriesPoint {
	var mine []*protocol.Result
	for _, r := range rs {
		if SeriesOf(r) == s {
			mine = append(mine, r)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return ResultBefore(mine[i], mine[j]) })
	out := make([]SeriesPoint, len(mine))
	var history []float64
	for i, r := range mine {
		passed := r.Status == protocol.StatusPassed
		v := r.Measurements.SamplesPerSec
		out[i] = SeriesPoint{Result: r, Judgement: gate.Judge(passed, v, history), OnBaseline: r.Source.Branch == gate.BaselineBranch}
		if passed && v > 0 && !math.IsInf(v, 0) && out[i].OnBaseline {
			history = append(history, v)
		}
	}
	return out
}

// ResultBefore orders results by run creation, then run, then job: the
// order of a series over time.
func ResultBefore(a, b *protocol.Result) bool {
	switch {
	case !a.RunCreatedAt.Equal(b.RunCreatedAt):
		return a.RunCreatedAt.Before(b.RunCreatedAt)
	case a.Run != b.Run:
		return a.Run < b.Run
	default:
		return a.Job < b.Job
	}
}

// RunJobs is how many jobs run m has: its confirmation repeats are
// attempts of their original's job, not jobs.
func RunJobs(m *protocol.RunManifest) int {
	return len(withoutRepeats(m).Jobs)
}

// RunProgress is ProgressOf the run's jobs without their confirmation
// repeats (what `runs list`, `runs show` and the dashboard's recent runs
// count): a run of 1 job confirmed twice is 1 job, 1/1 done.
func RunProgress(m *protocol.RunManifest, states map[string]*JobState) Progress {
	jobs := make(map[string]*JobState, len(states))
	for id, st := range states {
		if st.Job.Repeat == 0 {
			jobs[id] = st
		}
	}
	return ProgressOf(m, jobs)
}
