package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/hostfault"
	"github.com/benchfleet/benchfleet/worker/metrics"
)

// Worker serves the slots of one host. Start it, then Stop it (gracefully)
// or cancel Start's ctx (hard stop: running jobs are handed back).
type Worker struct {
	cfg  Config
	log  zerolog.Logger
	js   jetstream.JetStream
	topo *topology.Handles
	host string

	slots   []*slot
	events  *eventPublisher
	failed  *failedBoards
	excused *excusedDeliveries
	streaks *hostfault.Streaks
	rec     *recordGate
	jsGate  *jetStreamGate
	metrics *metrics.Worker

	// claimCtx ends when the worker stops claiming (drain); runCtx ends when
	// running jobs must stop and be handed back (hard stop).
	claimCtx    context.Context
	stopClaim   context.CancelFunc
	runCtx      context.Context
	stopRunning context.CancelFunc

	cancels *cancelWatch
	wg      sync.WaitGroup
	// watchers counts the goroutines of the KV watches (cancel flags,
	// board releases); they end with runCtx.
	watchers sync.WaitGroup
	done     chan struct{}
	started  atomic.Bool
	startAt  time.Time

	statusMu   sync.Mutex
	statusKick chan struct{}
	draining   atomic.Bool
}

// New validates cfg and returns a worker ready to Start.
func New(cfg Config) (*Worker, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	// A fresh host has nothing: create the work directory (and its
	// parents) rather than failing every job on it.
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: Config.WorkDir: %w", err)
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("worker: jetstream: %w", err)
	}
	host, _ := os.Hostname()
	w := &Worker{
		cfg:        cfg,
		log:        cfg.Log.With().Str("component", "worker").Str("worker", cfg.ID).Logger(),
		js:         js,
		host:       host,
		done:       make(chan struct{}),
		statusKick: make(chan struct{}, 1),
		failed:     newFailedBoards(),
		excused:    newExcusedDeliveries(),
		streaks:    hostfault.NewStreaks(),
	}
	w.rec = newRecordGate(cfg.Store, cfg.Sink, w.log, w.kickStatus)
	w.jsGate = newJetStreamGate(w.log, w.kickStatus)
	w.events = newEventPublisher(js, w.log)
	for i := range cfg.Slots {
		w.slots = append(w.slots, newSlot(w, cfg.Slots[i]))
	}
	pools := make([]string, 0, len(w.slots))
	for _, s := range w.slots {
		pools = append(pools, s.dev.Pool)
	}
	if w.metrics, err = metrics.NewWorker(cfg.Registry, metricsState{w}, pools, cfg.Version, cfg.Revision); err != nil {
		return nil, fmt.Errorf("worker: Config.Registry: %w", err)
	}
	return w, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Start creates the topology if needed, then runs every slot until Stop or
// ctx ends. It returns once the worker is claiming jobs. A Start that fails
// stops what it started (watchers, subscriptions) before it returns, and
// may be called again.
func (w *Worker) Start(ctx context.Context) (err error) {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("worker: already started")
	}
	// undo stops what this Start started, last first, should it fail.
	var undo []func()
	defer func() {
		if err == nil {
			return
		}
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		w.started.Store(false)
	}()
	// What jobs of a worker that died here left (processes, rooms,
	// cgroups) goes before any slot claims.
	w.sweep(ctx)
	topo, err := topology.Ensure(ctx, w.js, topology.Config{AckWait: w.cfg.AckWait, Replicas: w.cfg.Replicas, Log: w.log})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.topo = topo
	w.startAt = time.Now().UTC()
	w.runCtx, w.stopRunning = context.WithCancel(context.WithoutCancel(ctx))
	w.claimCtx, w.stopClaim = context.WithCancel(w.runCtx)
	// ctx ending is a hard stop.
	stop := context.AfterFunc(ctx, func() { w.stopRunning() })
	undo = append(undo, func() {
		stop()
		w.stopRunning()
		w.watchers.Wait()
	})

	w.cancels, err = watchCancels(w.runCtx, topo.Runs, w.log, &w.watchers)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if err := w.watchReleases(w.runCtx); err != nil {
		return err
	}
	// One core subscription per pool wakes idle slots when a job arrives.
	pools := map[string][]*slot{}
	for _, s := range w.slots {
		pools[s.dev.Pool] = append(pools[s.dev.Pool], s)
	}
	var subs []*nats.Subscription
	unsubscribe := func() {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
	}
	undo = append(undo, unsubscribe)
	poolConsumers := map[string][]jetstream.Consumer{}
	for pool, ss := range pools {
		// The slots of a pool share its consumers (one per queue:
		// protocol.PoolQueues, in the order they are served).
		queues := protocol.PoolQueues(pool)
		consumers, err := w.poolConsumers(ctx, queues)
		if err != nil {
			return err
		}
		poolConsumers[pool] = consumers
		hint := newEmptyHint(len(consumers))
		for _, s := range ss {
			s.consumers, s.hint = consumers, hint
		}
		// The consumers may predate this worker's --ack-wait (only
		// `topology apply` changes them): heartbeat well inside theirs.
		for _, c := range consumers {
			if aw := c.CachedInfo().Config.AckWait; aw >= 3*time.Millisecond && w.cfg.Heartbeat > aw/3 {
				w.log.Warn().Dur("consumer_ack_wait", aw).Dur("heartbeat", aw/3).Str("pool", pool).
					Msg("the job consumers' ack wait is shorter than this worker's; heartbeating at a third of theirs")
				w.cfg.Heartbeat = aw / 3
			}
		}
		wake := func(m *nats.Msg) {
			if q, err := protocol.ParseQueue(m.Subject); err == nil {
				hint.publishedTo(slices.Index(queues, q))
			}
			for _, s := range ss {
				s.wakeUp()
			}
		}
		for _, prefix := range []string{protocol.SubjectJobsPrefix, protocol.SubjectUntrustedPrefix} {
			sub, err := w.cfg.Conn.Subscribe(prefix+"."+pool+".*", wake)
			if err != nil {
				return fmt.Errorf("worker: subscribe %s: %w", pool, err)
			}
			subs = append(subs, sub)
		}
	}
	probeCtx, stopProbe := context.WithCancel(w.runCtx)
	go w.rec.run(probeCtx)
	for _, s := range w.slots {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			s.loop()
		}()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.heartbeatLoop()
	}()
	if w.metrics != nil {
		slotsDone := make(chan struct{})
		go func() {
			for _, s := range w.slots {
				<-s.done
			}
			close(slotsDone)
		}()
		go w.metrics.QueueDepthLoop(w.runCtx, slotsDone, poolConsumers)
	}
	go func() {
		w.wg.Wait()
		stopProbe()
		w.events.shutdown(5 * time.Second)
		stop()
		unsubscribe()
		// Nothing runs any more: the watchers stop too.
		w.stopRunning()
		w.watchers.Wait()
		// The worker is gone: remove its heartbeat so fleet status does not
		// show it until the TTL.
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = w.topo.Workers.Delete(dctx, w.cfg.ID)
		cancel()
		close(w.done)
	}()
	w.log.Info().Int("slots", len(w.slots)).Msg("worker started")
	return nil
}

// poolConsumers returns the consumers of a pool's queues, in their order.
func (w *Worker) poolConsumers(ctx context.Context, queues []protocol.Queue) ([]jetstream.Consumer, error) {
	var out []jetstream.Consumer
	for _, q := range queues {
		c, err := topology.EnsureConsumer(ctx, w.js, q, w.cfg.AckWait)
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Stop drains the worker: no new job is claimed, running jobs finish
// (bounded by Config.DrainTimeout and ctx); then anything still running is
// stopped and handed back for redelivery. Stop returns when every slot has
// ended. Calling Stop again, or cancelling ctx, stops at once.
func (w *Worker) Stop(ctx context.Context) error {
	if !w.started.Load() || w.stopClaim == nil {
		return nil
	}
	if w.draining.CompareAndSwap(false, true) {
		w.log.Info().Str("timeout", w.cfg.DrainTimeout.String()).Msg("draining: finishing running jobs, claiming nothing new")
		w.kickStatus()
		w.stopClaim()
	} else {
		w.log.Warn().Msg("stopping now: running jobs are handed back")
		w.stopRunning()
	}
	t := time.NewTimer(w.cfg.DrainTimeout)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	case <-t.C:
		w.log.Warn().Msg("drain timeout: stopping running jobs")
	}
	w.stopRunning()
	<-w.done
	return nil
}

// Kill stops at once: running jobs are stopped and handed back.
func (w *Worker) Kill() {
	if w.stopRunning != nil {
		w.stopRunning()
	}
}

// Done is closed when the worker has stopped.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Status is the worker's current heartbeat document.
func (w *Worker) Status() protocol.WorkerStatus {
	st := protocol.WorkerStatus{
		Schema:    protocol.SchemaWorker,
		ID:        w.cfg.ID,
		Host:      w.host,
		Version:   w.cfg.Version,
		Revision:  w.cfg.Revision,
		StartedAt: w.startAt,
		Time:      time.Now().UTC(),
		Draining:  w.draining.Load(),
		Store:     w.rec.describe(),
		PID:       os.Getpid(),
	}
	// A spool (spool.Spool) says where it is and what it holds, so a
	// result spooled here is never out of sight.
	if sp, ok := w.cfg.Sink.(interface {
		Dir() string
		Pending() int
	}); ok {
		st.Spool = &protocol.SpoolStatus{Path: sp.Dir(), Entries: sp.Pending()}
	}
	for _, s := range w.slots {
		st.Devices = append(st.Devices, s.status())
	}
	return st
}

func (w *Worker) kickStatus() {
	select {
	case w.statusKick <- struct{}{}:
	default:
	}
}

// statusEvery is the longest gap between two heartbeats in bench-workers;
// it stays well inside the bucket's TTL whatever the ack-wait.
const statusEvery = 10 * time.Second

// heartbeatLoop writes the worker status to bench-workers every
// min(Heartbeat, statusEvery) and whenever a slot changes state (at most
// every 200ms).
func (w *Worker) heartbeatLoop() {
	t := time.NewTicker(min(w.cfg.Heartbeat, statusEvery))
	defer t.Stop()
	slotsDone := make(chan struct{})
	go func() {
		for _, s := range w.slots {
			<-s.done
		}
		close(slotsDone)
	}()
	for {
		w.putStatus()
		select {
		case <-slotsDone:
			return
		case <-t.C:
		case <-w.statusKick:
			select {
			case <-slotsDone:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (w *Worker) putStatus() {
	data, err := json.Marshal(w.Status())
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = w.topo.Workers.Put(ctx, w.cfg.ID, data)
	if err != nil {
		w.metrics.HeartbeatFailed(metrics.HeartbeatStatus)
		w.log.Debug().Err(err).Msg("heartbeat not written")
	}
	if w.runCtx.Err() == nil {
		w.jsGate.observe(jsStatus, err)
	}
}
