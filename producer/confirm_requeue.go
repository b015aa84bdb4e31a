package producer

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
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
	// OnQueued, if not nil, is called by Confirm when it has queued the
	// repeats (jobs in all) of suspects suspected regressions, before it
	// waits for them.
	OnQueued func(suspects, jobs int)
}

// Suspects are the rows of rep the gate suspects of a regression
// (GateRow.Suspect: no confirmation repeats yet): what Requeue re-queues.
// None when a job of the run did not pass or had not ended: that run
// fails (or times out) whatever repeats would show.
func Suspects(rep *RunReport) []Row {
	if rep == nil || RowsOutcome(rep.Rows) != OutcomePass || rep.Unfinished() > 0 {
		return nil
	}
	var out []Row
	for _, r := range rep.Rows {
		if v := rep.verdictOf(r.Job); v != nil && v.Suspect && r.Result != nil {
			out = append(out, r)
		}
	}
	return out
}

// Requeue adds c.Repeats confirmation repeats of each of rep's Suspects to
// the run's manifest (bench-runs, then the store's copy) and publishes
// them, and returns the manifest with them and the number of jobs queued
// (0 and rep's manifest when there is nothing to confirm). The manifest is
// recorded before the jobs go out, so a waiter that sees a repeat's result
// knows whose attempt it is. A suspect that has repeats in the stored
// manifest already (a re-attached run) is not queued again.
func (c *Confirmer) Requeue(ctx context.Context, rep *RunReport) (*protocol.RunManifest, int, error) {
	suspects := Suspects(rep)
	if len(suspects) == 0 || c.Repeats <= 0 {
		return rep.Manifest, 0, nil
	}
	if c.Repeats > protocol.MaxRepeat {
		return nil, 0, fmt.Errorf("confirm: %d repeats: at most %d", c.Repeats, protocol.MaxRepeat)
	}
	runs, err := c.JS.KeyValue(ctx, protocol.BucketRuns)
	if err != nil {
		return nil, 0, fmt.Errorf("confirm: %w", err)
	}
	var (
		man  *protocol.RunManifest
		jobs []*protocol.Job
	)
	for try := 0; ; try++ {
		man, jobs, err = c.record(ctx, runs, rep.Manifest.Run, suspects)
		if !errors.Is(err, jetstream.ErrKeyExists) || try == 4 {
			break
		}
		// The manifest changed between the read and the update: again.
	}
	if err != nil {
		return nil, 0, fmt.Errorf("confirm: run %s: %w", rep.Manifest.Run, err)
	}
	if len(jobs) == 0 {
		return man, 0, nil
	}
	w := &jobPublisher{p: &Submitter{JS: c.JS, Log: c.Log}, jobs: jobs, created: man.CreatedAt}
	if err := w.run(ctx); err != nil {
		return nil, 0, fmt.Errorf("confirm: run %s: %w", rep.Manifest.Run, err)
	}
	return man, len(jobs), nil
}

// record adds the repeats of suspects that the stored manifest lacks, and
// returns the manifest and the jobs to publish.
func (c *Confirmer) record(ctx context.Context, runs jetstream.KeyValue, run string, suspects []Row) (*protocol.RunManifest, []*protocol.Job, error) {
	head, err := runs.Get(ctx, protocol.ManifestKey(run))
	if err != nil {
		return nil, nil, err
	}
	man, err := GetManifest(ctx, runs, run)
	if err != nil {
		return nil, nil, err
	}
	have := repeatsOf(man)
	byID := map[string]protocol.ManifestJob{}
	for _, j := range man.Jobs {
		byID[j.ID] = j
	}
	var jobs []*protocol.Job
	for _, s := range suspects {
		mj, ok := byID[s.Job]
		if !ok || len(have[s.Job]) > 0 {
			continue
		}
		for k := 1; k <= c.Repeats; k++ {
			j, err := RepeatJob(man, mj, s.Result, k)
			if err != nil {
				return nil, nil, err
			}
			cell, _ := j.CellID()
			jobs = append(jobs, j)
			man.Jobs = append(man.Jobs, protocol.ManifestJob{ID: j.ID, Pool: j.Pool, Runner: j.Runner, Model: j.Benchmark.Model,
				Test: j.Benchmark.Test, BatchSize: j.Benchmark.BatchSize, DataFormat: j.Benchmark.DataFormat, Cell: cell, Repeat: k, Of: s.Job})
		}
	}
	if len(jobs) == 0 {
		return man, nil, nil
	}
	var rec manifestRecord
	if err := rec.prepare(ctx, runs, man, false); err != nil {
		return nil, nil, err
	}
	if _, err := runs.Update(ctx, protocol.ManifestKey(run), rec.head, head.Revision()); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return nil, nil, fmt.Errorf("%w: %v", jetstream.ErrKeyExists, err)
		}
		return nil, nil, err
	}
	if c.Store != nil {
		if err := storage.PutJSON(ctx, c.Store, storage.ManifestKey(run), man); err != nil {
			c.Log.Warn().Err(err).Str("run", run).Msg("manifest with the confirmation repeats not written to the store")
		}
	}
	return man, jobs, nil
}

// Confirm judges the run w follows (its states so far, as req judges it,
// with the gate on), re-queues its suspected regressions (Requeue) and
// waits with w for their repeats to end. It returns the run's states with
// the repeats (w.Manifest then lists them) and the number of jobs queued;
// with nothing to confirm, states as they were and 0. A ctx that ends
// returns the states so far and ctx's error, as Watcher.Wait does.
func (c *Confirmer) Confirm(ctx context.Context, w *Watcher, states map[string]*JobState, req JudgeRequest, onUpdate func(Progress)) (map[string]*JobState, int, error) {
	req.Manifest, req.Rows, req.Gate = w.Manifest, Rows(w.Manifest, states), true
	v, err := Judge(ctx, req)
	if err != nil {
		return states, 0, err
	}
	m, n, err := c.Requeue(ctx, v.Report)
	if err != nil || n == 0 {
		return states, 0, err
	}
	if c.OnQueued != nil {
		c.OnQueued(len(Suspects(v.Report)), n)
	}
	w.Manifest = m
	states, err = w.Wait(ctx, onUpdate)
	return states, n, err
}
