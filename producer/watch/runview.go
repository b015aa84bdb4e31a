package watch

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/producer/runstate"
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
	Progress *runstate.Progress
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
		m, err := runstate.GetManifest(ctx, runs, run)
		switch {
		case err == nil:
			out = append(out, RunSummary{Manifest: m, Cancelled: cancelled[run]})
		case errors.Is(err, runstate.ErrBadManifest):
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
		p := runstate.ProgressOf(out[i].Manifest, states)
		out[i].Progress = &p
		out[i].State = runstate.RunState(p, out[i].Cancelled)
	}
	if skipped != nil {
		return out, &runstate.SkippedRunsError{Errs: skipped}
	}
	return out, nil
}

// QueueDepth is one job consumer's backlog.
type QueueDepth struct {
	Pool     string
	Priority protocol.Priority
	// Trust is TrustUntrusted for a queue of BENCH_UNTRUSTED.
	Trust protocol.Trust
	// Pending: queued, not yet delivered; InFlight: delivered, not acked.
	Pending, InFlight uint64
}

// ReadQueues returns the backlog of every job consumer that exists
// (pools × their queues, in protocol.PoolQueues order: BENCH_JOBS' and
// BENCH_UNTRUSTED's).
func ReadQueues(ctx context.Context, js jetstream.JetStream) ([]QueueDepth, error) {
	var out []QueueDepth
	for _, pool := range protocol.Pools {
		for _, q := range protocol.PoolQueues(pool) {
			c, err := js.Consumer(ctx, q.Stream(), q.Consumer())
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("queue %s: %w", q, err)
			}
			info := c.CachedInfo()
			if fresh, err := c.Info(ctx); err == nil {
				info = fresh
			}
			out = append(out, QueueDepth{Pool: pool, Priority: q.Priority, Trust: q.Trust, Pending: info.NumPending, InFlight: uint64(info.NumAckPending)})
		}
	}
	return out, nil
}
