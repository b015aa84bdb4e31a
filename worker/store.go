package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// StoreCallTimeout bounds each store call on a job's path: the check at
// claim for an earlier attempt's result and, without a spool, each request
// of the result's delivery (a spool bounds its own the same way:
// spool.Config.CallTimeout, 5 s by default; a Put also gets time for
// its bytes, storage.CallTimeoutMinRate). A store that does not answer
// within it is treated as down: the job runs, its result goes to the spool
// and the job is acked, while the claim's heartbeat keeps it this slot's.
const StoreCallTimeout = 5 * time.Second

// storeProbeEvery is how often, while the store does not answer or a
// result could not be recorded, the worker asks the store (and the spool)
// whether it can record again.
const storeProbeEvery = 2 * time.Second

// recordGate is the worker's view of whether it can make a result durable:
// whether the store answers (as the job path last found it, then as its
// probe finds it) and whether recording is blocked (the store does not
// answer and the sink cannot take a result either: no spool, or a spool
// whose disk refuses writes). While blocked, slots claim nothing: a job
// whose result cannot be recorded is the host's fault, not the job's.
type recordGate struct {
	store storage.Bucket // with StoreCallTimeout
	sink  Sink
	log   zerolog.Logger
	kick  func() // the worker's status changed

	mu           sync.Mutex
	storeErr     error // nil while the store answers
	storeSince   time.Time
	blocked      error // nil while a result can be recorded
	blockedSince time.Time
	resumed      chan struct{} // closed when blocked clears
	wake         chan struct{} // starts the probe
}

func newRecordGate(store storage.Bucket, sink Sink, log zerolog.Logger, kick func()) *recordGate {
	return &recordGate{store: storage.WithCallTimeout(store, StoreCallTimeout), sink: sink, log: log, kick: kick,
		resumed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// errResultSpooled stands for the store's failure when the spool took a
// result in its place (the spool logs the store's own error).
var errResultSpooled = fmt.Errorf("%w: the store did not take the last result; it went to the spool", storage.ErrUnavailable)

// observe records what a store call on the job path found: nil, or any
// answer but ErrUnavailable, means the store answers.
func (g *recordGate) observe(err error) {
	if err != nil && !errors.Is(err, storage.ErrUnavailable) {
		err = nil
	}
	g.mu.Lock()
	changed := (g.storeErr == nil) != (err == nil)
	if err == nil {
		g.storeErr = nil
	} else {
		if g.storeErr == nil {
			g.storeSince = time.Now().UTC()
		}
		// The spool's stand-in does not hide a more telling error.
		if !errors.Is(err, errResultSpooled) || g.storeErr == nil {
			g.storeErr = err
		}
	}
	g.mu.Unlock()
	if changed {
		if err != nil {
			g.log.Warn().Err(err).Msg("store not answering; results go to the spool, if there is one")
			g.startProbe()
		} else {
			g.log.Info().Msg("store answering again")
		}
		g.kick()
	}
}

// storeDown returns the store's last failure, nil while it answers.
func (g *recordGate) storeDown() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.storeErr
}

// errStoreNotAsked: exists did not ask a store known not to answer.
var errStoreNotAsked = errors.New("not asked: the store is not answering")

// exists is the job path's check for an existing result, bounded by
// StoreCallTimeout. While the store is known not to answer it is not asked
// (the probe finds when it answers again): the error says so.
func (g *recordGate) exists(ctx context.Context, key string) (bool, error) {
	if err := g.storeDown(); err != nil {
		return false, fmt.Errorf("%w (%w)", errStoreNotAsked, err)
	}
	ok, err := g.store.Exists(ctx, key)
	g.observe(err)
	return ok, err
}

// canRecord reports nil when a result could be made durable now: the store
// answers, or the sink is a spool that takes a file.
func (g *recordGate) canRecord(ctx context.Context) error {
	serr := g.storeDown()
	if serr == nil {
		return nil
	}
	switch sk := g.sink.(type) {
	case DirectSink:
		return fmt.Errorf("store not answering (%w) and no spool", serr)
	case SinkChecker:
		cctx, cancel := context.WithTimeout(ctx, healthTimeout)
		defer cancel()
		if err := sk.Check(cctx); err != nil {
			return fmt.Errorf("store not answering (%v) and %w", serr, err)
		}
	}
	return nil
}

// block stops claiming: a result could not be recorded (cause).
func (g *recordGate) block(cause error) {
	g.mu.Lock()
	first := g.blocked == nil
	g.blocked = cause
	if first {
		g.blockedSince = time.Now().UTC()
	}
	g.mu.Unlock()
	if first {
		g.log.Error().Err(cause).Msg("cannot record results: claiming nothing until a result can be recorded")
		g.kick()
	}
	g.startProbe()
}

// blockedBy returns why recording is blocked (nil if it is not) and a
// channel closed once it is not.
func (g *recordGate) blockedBy() (error, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.blocked, g.resumed
}

func (g *recordGate) unblock() {
	g.mu.Lock()
	was := g.blocked != nil
	if was {
		g.blocked = nil
		close(g.resumed)
		g.resumed = make(chan struct{})
	}
	g.mu.Unlock()
	if was {
		g.log.Info().Msg("results can be recorded again: claiming resumes")
		g.kick()
	}
}

// describe is the store's trouble for the worker's status and /healthz,
// "" when there is none.
func (g *recordGate) describe() string {
	g.mu.Lock()
	serr, since, blocked, bsince := g.storeErr, g.storeSince, g.blocked, g.blockedSince
	g.mu.Unlock()
	s := ""
	if serr != nil {
		s = fmt.Sprintf("store not answering since %s (%v)", since.Format(time.RFC3339), serr)
		if p, ok := g.sink.(interface{ Pending() int }); ok && blocked == nil {
			s += fmt.Sprintf("; results are spooled locally (%d pending)", p.Pending())
		}
	}
	if blocked != nil {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("cannot record results since %s (%v): claiming nothing until it can", bsince.Format(time.RFC3339), blocked)
	}
	return s
}

func (g *recordGate) startProbe() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// storeCheckEvery is how often, while the store answers, the worker asks
// it whether it still does: an idle worker, or one whose results all go
// to the spool, then still says when the store went away (its status,
// /healthz, benchfleet_store_available).
const storeCheckEvery = 30 * time.Second

// run probes the store every storeProbeEvery while it does not answer or
// recording is blocked, and every storeCheckEvery while it answers, until
// ctx ends. A store that answers ends both; a spool that takes a file
// again ends the block.
func (g *recordGate) run(ctx context.Context) {
	check := time.NewTicker(storeCheckEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		case <-check.C:
			if g.storeDown() == nil {
				g.probe(ctx)
			}
		}
		for {
			blocked, _ := g.blockedBy()
			if g.storeDown() == nil && blocked == nil {
				break
			}
			sleepCtx(ctx, storeProbeEvery)
			if ctx.Err() != nil {
				return
			}
			g.probe(ctx)
		}
	}
}

func (g *recordGate) probe(ctx context.Context) {
	_, err := g.store.Exists(ctx, healthProbeKey)
	if ctx.Err() != nil {
		return
	}
	g.observe(err)
	if err == nil {
		g.unblock()
		return
	}
	if blocked, _ := g.blockedBy(); blocked == nil {
		return
	}
	if _, direct := g.sink.(DirectSink); direct {
		return
	}
	if c, ok := g.sink.(SinkChecker); ok {
		cctx, cancel := context.WithTimeout(ctx, healthTimeout)
		cerr := c.Check(cctx)
		cancel()
		if cerr == nil {
			g.unblock()
		}
	}
}

// unrecordable reports whether a delivery failed because this host cannot
// record results now (the store did not answer and the spool, if any,
// refused), not because of the result.
func unrecordable(err error) bool {
	return errors.Is(err, spool.ErrRefused) || errors.Is(err, storage.ErrUnavailable)
}

// excusedDeliveries counts, per job, the deliveries this worker handed
// back because it could not record their result: they are the host's, and
// do not count against MaxDeliver here. Bounded like failedBoards.
type excusedDeliveries struct {
	mu    sync.Mutex
	jobs  map[string]int
	order []string
}

func newExcusedDeliveries() *excusedDeliveries { return &excusedDeliveries{jobs: map[string]int{}} }

func (e *excusedDeliveries) add(job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.jobs[job]; !ok {
		if len(e.order) >= maxFailedJobs {
			delete(e.jobs, e.order[0])
			e.order = e.order[1:]
		}
		e.order = append(e.order, job)
	}
	e.jobs[job]++
}

func (e *excusedDeliveries) count(job string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.jobs[job]
}

func (e *excusedDeliveries) forget(job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.jobs[job]; !ok {
		return
	}
	delete(e.jobs, job)
	for i, j := range e.order {
		if j == job {
			e.order = append(e.order[:i], e.order[i+1:]...)
			break
		}
	}
}
