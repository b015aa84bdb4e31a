package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// Confirmer re-queues a run's suspected regressions for confirmation.
type Confirmer struct {
	// JS publishes the repeats; the run's manifest in bench-runs gains them.
	JS jetstream.JetStream
	// Store, when not nil, gets the updated manifest document too.
	Store storage.Bucket
	// Repeats is how many repeats each suspect gets (1..protocol.MaxRepeat).
	Repeats int
	// Log gets what does not stop a confirmation (a manifest not written
	// to the store).
	Log zerolog.Logger
	// OnQueued, if not nil, is told by Confirm when it has queued the
	// repeats, before it waits for them, e.g. "1 suspected regression(s):
	// 2 jobs queued to confirm".
	OnQueued func(note string)
	// OnFailed, if not nil, is told why Confirm could not confirm (the
	// history or the manifest not read, the manifest not written, a repeat
	// not published); nil: it is logged to Log only.
	OnFailed func(error)
}

// Suspects are the rows of rep the gate suspects of a regression
// (GateRow.Suspect: no confirmation repeats yet): what Requeue re-queues.
// None when a job of the run did not pass or had not ended: that run
// fails (or times out) whatever repeats would show.
func Suspects(rep *gate.RunReport) []runstate.Row {
	if rep == nil || gate.RowsOutcome(rep.Rows) != gate.OutcomePass || rep.Unfinished() > 0 {
		return nil
	}
	var out []runstate.Row
	for _, r := range rep.Rows {
		if v := rep.VerdictOf(r.Job); v != nil && v.Suspect && r.Result != nil {
			out = append(out, r)
		}
	}
	return out
}

// Requeue publishes c.Repeats confirmation repeats of each of rep's
// Suspects, then adds them to the run's manifest (bench-runs, then the
// store's copy), and returns the manifest with them and the number of jobs
// queued (0 and rep's manifest when there is nothing to confirm). The jobs
// go out before the manifest names them, as Submit's do: a manifest never
// lists a repeat that no queue got, so a Requeue that failed or died
// halfway is completed by the next one (repeat ids are deterministic, so a
// repeat published twice is queued once). A suspect that has repeats in
// the stored manifest already (a re-attached run) is not queued again.
func (c *Confirmer) Requeue(ctx context.Context, rep *gate.RunReport) (*protocol.RunManifest, int, error) {
	suspects := Suspects(rep)
	if len(suspects) == 0 || c.Repeats <= 0 {
		return rep.Manifest, 0, nil
	}
	if c.Repeats > protocol.MaxRepeat {
		return nil, 0, fmt.Errorf("confirm: %d repeats: at most %d", c.Repeats, protocol.MaxRepeat)
	}
	run := rep.Manifest.Run
	var runs jetstream.KeyValue
	err := fleet.JSCall(ctx, "bucket "+protocol.BucketRuns, func(ctx context.Context) (err error) {
		runs, err = c.JS.KeyValue(ctx, protocol.BucketRuns)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("confirm: %w", err)
	}
	// The job stream checks a duplicate ack as Submit does (ErrSquatted):
	// repeat ids are predictable.
	// An untrusted run's repeats go to its stream (protocol.RunTrust).
	pub := &Submitter{JS: c.JS, Runs: runs, Log: c.Log}
	var stream jetstream.Stream
	name := protocol.QueueOf(run, "", "").Stream()
	err = fleet.JSCall(ctx, "stream "+name, func(ctx context.Context) (err error) {
		stream, err = c.JS.Stream(ctx, name)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("confirm: %w", err)
	}
	if protocol.RunTrust(run).Untrusted() {
		pub.Untrusted = stream
	} else {
		pub.Jobs = stream
	}
	for try := 0; ; try++ {
		up, err := c.plan(ctx, runs, run, suspects)
		if err != nil {
			return nil, 0, fmt.Errorf("confirm: run %s: %w", run, err)
		}
		if len(up.jobs) == 0 {
			return gate.MergeRepeats(rep.Manifest, up.man), 0, nil
		}
		w := &jobPublisher{p: pub, jobs: up.jobs, created: up.man.CreatedAt}
		if err := w.run(ctx); err != nil {
			return nil, 0, fmt.Errorf("confirm: run %s: %w", run, err)
		}
		err = c.record(ctx, runs, up)
		if errors.Is(err, jetstream.ErrKeyExists) && try < 4 {
			continue // the manifest changed between the read and the update: again
		}
		if err != nil {
			return nil, 0, fmt.Errorf("confirm: run %s: %w", run, err)
		}
		return gate.MergeRepeats(rep.Manifest, up.man), len(up.jobs), nil
	}
}

// manifestUpdate is a run's manifest with confirmation repeats added: the
// bench-runs header it was read at and the repeats to publish.
type manifestUpdate struct {
	head jetstream.KeyValueEntry
	man  *protocol.RunManifest
	// kept is how many jobs the header's chunks hold (0: inline jobs).
	kept int
	jobs []*protocol.Job
}

// plan reads the run's manifest and adds the repeats of suspects that it
// lacks.
func (c *Confirmer) plan(ctx context.Context, runs jetstream.KeyValue, run string, suspects []runstate.Row) (*manifestUpdate, error) {
	head, err := fleet.GetKey(ctx, runs, protocol.ManifestKey(run))
	if err != nil {
		return nil, err
	}
	man, err := runstate.GetManifest(ctx, runs, run)
	if err != nil {
		return nil, err
	}
	up := &manifestUpdate{head: head, man: man}
	var named protocol.RunManifest
	if json.Unmarshal(head.Value(), &named) == nil && named.Chunks > 0 {
		up.kept = named.JobCount
	}
	have := runstate.RepeatsOf(man)
	byID := map[string]protocol.ManifestJob{}
	for _, j := range man.Jobs {
		byID[j.ID] = j
	}
	for _, s := range suspects {
		mj, ok := byID[s.Job]
		if !ok || len(have[s.Job]) > 0 {
			continue
		}
		for k := 1; k <= c.Repeats; k++ {
			j, err := gate.RepeatJob(man, mj, s.Result, k)
			if err != nil {
				return nil, err
			}
			cell, _ := j.CellID()
			up.jobs = append(up.jobs, j)
			man.Jobs = append(man.Jobs, protocol.ManifestJob{ID: j.ID, Pool: j.Pool, Runner: j.Runner, Model: j.Benchmark.Model,
				Test: j.Benchmark.Test, BatchSize: j.Benchmark.BatchSize, DataFormat: j.Benchmark.DataFormat, Cell: cell, Repeat: k, Of: s.Job})
		}
	}
	if len(man.Jobs) > protocol.MaxRunJobs {
		return nil, fmt.Errorf("%d jobs with the repeats, more than a run may have (%d)", len(man.Jobs), protocol.MaxRunJobs)
	}
	return up, nil
}

// record writes up's manifest to bench-runs over the header it was read
// at (jetstream.ErrKeyExists when that changed meanwhile), then to the
// store.
func (c *Confirmer) record(ctx context.Context, runs jetstream.KeyValue, up *manifestUpdate) error {
	run := up.man.Run
	var rec manifestRecord
	if err := rec.prepare(ctx, runs, up.man, false, up.kept); err != nil {
		return err
	}
	// An update applied whose answer was lost fails its retry on the
	// revision: Requeue then reads the manifest again and finds it done.
	err := fleet.JSCall(ctx, "bucket "+protocol.BucketRuns, func(ctx context.Context) error {
		_, err := runs.Update(ctx, protocol.ManifestKey(run), rec.head, up.head.Revision())
		return err
	})
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return fmt.Errorf("%w: %v", jetstream.ErrKeyExists, err)
		}
		return err
	}
	if c.Store != nil {
		if err := storage.PutJSON(ctx, c.Store, storage.ManifestKey(run), up.man); err != nil {
			c.Log.Warn().Err(err).Str("run", run).Msg("manifest with the confirmation repeats not written to the store")
		}
	}
	return nil
}

// Confirm judges the run w follows (its states so far, as req judges it,
// with the gate on), re-queues its suspected regressions (Requeue) and
// waits with w for their repeats to end. It returns the run's states with
// the repeats (w.Manifest then lists them) and the number of jobs queued;
// with nothing to confirm, states as they were and 0. A confirmation that
// cannot be done is not the run's failure: Confirm tells OnFailed and
// returns states as they were, with no error, and the gate judges their
// suspects unconfirmed (a regression fails, as with Repeats 0). A ctx that
// ends returns the states so far and ctx's error, as Watcher.Wait does.
func (c *Confirmer) Confirm(ctx context.Context, w *watch.Watcher, states map[string]*runstate.JobState, req gate.RunInput, onUpdate func(runstate.Progress)) (map[string]*runstate.JobState, int, error) {
	req.Manifest, req.States, req.Gate = w.Manifest, states, true
	v, err := gate.JudgeRun(ctx, req)
	var m *protocol.RunManifest
	n := 0
	if err == nil {
		m, n, err = c.Requeue(ctx, v.Report)
	}
	if err != nil && ctx.Err() == nil {
		c.Log.Warn().Err(err).Str("run", w.Manifest.Run).Msg("suspected regressions not confirmed")
		if c.OnFailed != nil {
			c.OnFailed(fmt.Errorf("suspected regressions not confirmed, judged on their one attempt: %w", err))
		}
		return states, 0, nil
	}
	if err != nil || n == 0 {
		return states, 0, err
	}
	if c.OnQueued != nil {
		c.OnQueued(fmt.Sprintf("%d suspected regression(s): %d %s queued to confirm", len(Suspects(v.Report)), n, runstate.Plural(n, "job", "jobs")))
	}
	w.Manifest = m
	states, err = w.Wait(ctx, onUpdate)
	return states, n, err
}
