package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// Submission is a run to submit.
type Submission struct {
	Run       string
	Submitter string
	Source    protocol.Source
	Priority  protocol.Priority
	Jobs      []*protocol.Job
	Labels    map[string]string
}

// SubmitResult says what Submit did.
type SubmitResult struct {
	Manifest *protocol.RunManifest
	// Attached is true when the run already existed: nothing was published
	// and the caller waits on the existing run.
	Attached bool
	// Published counts the jobs published (0 when attached).
	Published int
	// Schedule says in what order the jobs were published (zero when
	// attached).
	Schedule Schedule
	// Warnings are what the submitter should be told besides: a re-attach
	// to a run whose wheels have the names given but other bytes (a
	// rebuild of the commit) says that the run measures its first build,
	// naming both sha256s of each wheel. Nil: nothing to say.
	Warnings []string
}

// Submitter publishes runs.
type Submitter struct {
	JS jetstream.JetStream
	// Runs is the bench-runs bucket, where the run's manifest is recorded
	// (required).
	Runs jetstream.KeyValue
	// Jobs is the BENCH_JOBS stream; when set, a duplicate publish ack is
	// checked against the message the stream holds (ErrSquatted). Nil: not
	// checked.
	Jobs jetstream.Stream
	// Untrusted is the BENCH_UNTRUSTED stream, where the jobs of an
	// untrusted run (protocol.RunTrust) go; checked as Jobs is. Nil: not
	// checked.
	Untrusted jetstream.Stream
	Store     storage.Bucket // optional: the manifest is also written here
	Log       zerolog.Logger
	// Progress, when not nil, is called as Submit goes: stage "published"
	// with the jobs whose ack has come so far and the total. It is called
	// from Submit's goroutine and must not block. Nil: no progress.
	Progress func(stage string, done, total int)
	// History, when not nil, is the result store Submit reads the series'
	// past results from to publish a run's jobs longest expected first
	// within each priority (see Schedule); nil publishes them in matrix
	// order. The manifest lists them in matrix order either way.
	History storage.Bucket
	// Schedule bounds that read; the zero value reads the latest 5 passed
	// results per series of the last 14 days, for at most 10 s.
	Schedule ScheduleConfig
}

// Open is a Submitter on js with the farm's streams and buckets as a
// producer finds them: created with the default tuning when missing, used
// as they are when they exist (an operator's `topology apply` sets them).
// Store, History, Progress and Schedule are the caller's to set.
func Open(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) (*Submitter, error) {
	topo, err := topology.Ensure(ctx, js, topology.Config{})
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	return &Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Untrusted: topo.Untrusted, Log: log}, nil
}

// Submit publishes every job of s once and returns when every job is
// durably in BENCH_JOBS and the run is recorded.
//
// Job ids are deterministic and sent as Nats-Msg-Id, so a repeated Submit
// inside the duplicate window is a no-op; after the window the manifest in
// bench-runs makes it re-attach. A re-attach needs the run's jobs and
// source, but for the wheels' bytes: a submit whose wheels have the run's
// names and other sha256s (a rebuild of the commit) attaches to the run as
// it is, which measures the build it was first submitted with, and says so
// in SubmitResult.Warnings. Every job is validated and its id checked
// against its content before any is published: an invalid job publishes
// nothing. Jobs go out asynchronously, at most MaxInFlight unacknowledged
// at a time, and every ack is checked (a failed or lost one is published
// again, synchronously, riding out a leader election). No per-job queued
// events are published: a manifest job without events is queued. The
// manifest's header (or its one value) is created only
// after every job's ack, so a Submit that died halfway is completed by the
// next one; the chunks of a big run's manifest are written meanwhile, as
// they name nothing until the header does.
func (p *Submitter) Submit(ctx context.Context, s Submission) (*SubmitResult, error) {
	if err := protocol.ValidID("run", s.Run); err != nil {
		return nil, err
	}
	if len(s.Jobs) == 0 {
		return nil, fmt.Errorf("submit: run %s has no jobs", s.Run)
	}
	var existing *protocol.RunManifest
	err := retryFailover(ctx, func(ctx context.Context) error {
		var err error
		existing, err = p.Manifest(ctx, s.Run)
		return err
	}, jetstream.ErrKeyNotFound)
	if m := existing; err == nil {
		s, rebuilt := onRunBuild(m, s)
		if err := sameJobs(m, s.Jobs); err != nil {
			return nil, err
		}
		if err := sameSource(m, s, time.Now()); err != nil {
			return nil, err
		}
		res := &SubmitResult{Manifest: m, Attached: true}
		if rebuilt != "" {
			res.Warnings = []string{rebuilt}
		}
		return res, nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, err
	}
	created := time.Now().UTC()
	man := &protocol.RunManifest{
		Schema: protocol.SchemaManifest, Run: s.Run, CreatedAt: created, Submitter: s.Submitter,
		Source: s.Source, Priority: s.Priority, Labels: s.Labels,
		Jobs: make([]protocol.ManifestJob, 0, len(s.Jobs)),
	}
	for _, j := range s.Jobs {
		j.CreatedAt = created
		j.Run = s.Run
		if err := j.Validate(); err != nil {
			return nil, fmt.Errorf("submit: job %s: %w", j.ID, err)
		}
		cell, id := j.CellID()
		if j.ID != id {
			return nil, fmt.Errorf("submit: job %s: %w", j.ID, j.CheckID())
		}
		man.Jobs = append(man.Jobs, protocol.ManifestJob{ID: j.ID, Pool: j.Pool, Runner: j.Runner,
			Model: j.Benchmark.Model, Test: j.Benchmark.Test, BatchSize: j.Benchmark.BatchSize, DataFormat: j.Benchmark.DataFormat, Cell: cell})
	}
	// The manifest's chunks and its store document are written and encoded
	// while the jobs go out; the header waits for the jobs.
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rec manifestRecord
	recorded := make(chan error, 1)
	go func() { recorded <- rec.prepare(mctx, p.Runs, man, p.Store != nil, 0) }()

	order, sched := p.schedule(ctx, s.Jobs)
	w := &jobPublisher{p: p, jobs: order, created: created}
	if err := w.run(ctx); err != nil {
		cancel()
		<-recorded
		return nil, fmt.Errorf("submit: %w", err)
	}
	if err := <-recorded; err != nil {
		return nil, fmt.Errorf("submit: record run %s: %w", s.Run, err)
	}
	if err := rec.commit(ctx, p.Runs, s.Run); err != nil {
		return nil, fmt.Errorf("submit: record run %s: %w", s.Run, err)
	}
	if p.Store != nil {
		err := p.Store.Put(ctx, storage.ManifestKey(s.Run), bytes.NewReader(rec.doc),
			storage.ContentType("application/json"), storage.Size(int64(len(rec.doc))))
		if err != nil {
			p.Log.Warn().Err(err).Str("run", s.Run).Msg("manifest not written to the store")
		}
	}
	return &SubmitResult{Manifest: man, Published: w.published, Schedule: sched}, nil
}

// Bounds of Submit's waits during a NATS failover.
const (
	// ackStall: no publish ack for this long means the acks are lost.
	ackStall = 5 * time.Second
	// republishFor bounds the synchronous retries of one job (a leader
	// election takes seconds).
	republishFor = 30 * time.Second
	// eventsWait bounds Cancel's wait for its events' acks.
	eventsWait = 10 * time.Second
)

// retryFailover calls fn (each call bounded to 5s) until it succeeds,
// fails with one of the final errors, or republishFor passes: during a NATS
// leader election a KV read or write times out or finds no responder for a
// few seconds.
func retryFailover(ctx context.Context, fn func(context.Context) error, final ...error) error {
	deadline := time.Now().Add(republishFor)
	wait := 100 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		for _, f := range final {
			if errors.Is(err, f) {
				return err
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// republish publishes m synchronously, retrying with backoff for up to
// republishFor while the stream has no leader.
func (p *Submitter) republish(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	var ack *jetstream.PubAck
	err := retryFailover(ctx, func(ctx context.Context) error {
		var err error
		ack, err = p.JS.PublishMsg(ctx, m)
		return err
	})
	return ack, err
}

// Manifest reads a run's manifest from bench-runs. A missing run is
// jetstream.ErrKeyNotFound.
func (p *Submitter) Manifest(ctx context.Context, run string) (*protocol.RunManifest, error) {
	return runstate.GetManifest(ctx, p.Runs, run)
}

// prepare encodes man, writes its chunks (for a big run) and, with doc,
// encodes the store document. kept is how many of man's jobs (its first)
// the chunks of the header in bench-runs hold already (0 for a new run, or
// one whose jobs are inline): chunks are append-only, so those are never
// rewritten but for the last one named, which grows (GetManifest reads a
// chunk's jobs beyond its header's job_count as an append not committed
// yet, not a broken manifest).
func (r *manifestRecord) prepare(ctx context.Context, runs jetstream.KeyValue, man *protocol.RunManifest, doc bool, kept int) error {
	head := *man
	var chunks [][]byte
	if n := len(man.Jobs); n > protocol.MaxRunJobs {
		return fmt.Errorf("manifest: %d jobs, more than %d", n, protocol.MaxRunJobs)
	} else if n > protocol.ManifestChunkJobs {
		head.Jobs, head.JobCount = nil, n
		for i := 0; i*protocol.ManifestChunkJobs < n; i++ {
			end := min(n, (i+1)*protocol.ManifestChunkJobs)
			chunk := man.Jobs[i*protocol.ManifestChunkJobs : end]
			data, err := json.Marshal(chunk)
			if err != nil {
				return fmt.Errorf("encode manifest chunk %d: %w", i, err)
			}
			if end > kept {
				err = retryFailover(ctx, func(ctx context.Context) error {
					_, err := runs.Put(ctx, protocol.ManifestChunkKey(man.Run, i), data)
					return err
				})
				if err != nil {
					return fmt.Errorf("manifest chunk %d: %w", i, err)
				}
			}
			head.Chunks = i + 1
			chunks = append(chunks, data)
		}
	}
	var err error
	if r.head, err = json.Marshal(&head); err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if !doc {
		return nil
	}
	if chunks == nil {
		r.doc, err = json.Marshal(man)
		return err
	}
	// The whole manifest, its jobs spliced in from the chunks already
	// encoded: the encoding of man without its jobs has `"jobs":[]` once,
	// first among its keys to hold that text (no string in it can: their
	// quotes are escaped).
	empty := *man
	empty.Jobs = []protocol.ManifestJob{}
	outer, err := json.Marshal(&empty)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	const slot = `"jobs":[]`
	at := bytes.Index(outer, []byte(slot))
	if at < 0 {
		return fmt.Errorf("encode manifest: no %s in %.80s", slot, outer)
	}
	size := len(outer)
	for _, c := range chunks {
		size += len(c)
	}
	b := make([]byte, 0, size)
	b = append(b, outer[:at+len(slot)-1]...)
	for i, c := range chunks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c[1:len(c)-1]...) // the chunk's array without its brackets
	}
	r.doc = append(b, outer[at+len(slot)-1:]...)
	return nil
}

// commit creates the header: the run is recorded.
func (r *manifestRecord) commit(ctx context.Context, runs jetstream.KeyValue, run string) error {
	err := retryFailover(ctx, func(ctx context.Context) error {
		_, err := runs.Create(ctx, protocol.ManifestKey(run), r.head)
		return err
	}, jetstream.ErrKeyExists, nats.ErrMaxPayload)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	return nil
}

// Cancel sets the run's cancel flag: workers stop its running jobs and drop
// its queued ones when they claim them.
func Cancel(ctx context.Context, runs jetstream.KeyValue, run string) error {
	if _, err := runstate.GetManifest(ctx, runs, run); err != nil {
		return fmt.Errorf("cancel %s: %w", run, err)
	}
	if _, err := runs.Put(ctx, protocol.CancelKey(run), []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
		return fmt.Errorf("cancel %s: %w", run, err)
	}
	return nil
}

// publishEvent publishes an event asynchronously; callers wait on
// PublishAsyncComplete. Events are informational: a lost one is not fatal.
func publishEvent(js jetstream.JetStream, e protocol.Event) {
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	_, _ = js.PublishAsync(protocol.EventSubject(e.Run, e.Job), data)
}

// manifestRecord is a run's manifest on its way into bench-runs, in a
// form that fits any run size: up to protocol.ManifestChunkJobs jobs inline
// in one value; beyond that the jobs in chunk values, written first, and a
// header naming them. The header (or the one value) is created last, by
// commit: it is the commit point, and a run recorded already is left as it
// is.
type manifestRecord struct {
	head []byte // the header, or the whole manifest of a small run
	doc  []byte // the store's manifest document (the whole manifest as JSON), when asked for
}
