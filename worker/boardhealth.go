package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// A Tenstorrent board's lasting health lives in the bench-health bucket
// (protocol.DeviceHealth): its quarantine, which survives a worker restart
// until an operator releases it (`benchfleet fleet release WORKER DEVICE`),
// and its history of outcomes, resets and quarantines. Built-in slots keep
// none (they have no board).

// board reports whether the slot serves a real board (not a built-in slot).
func (s *slot) board() bool {
	_, builtin := s.health.(device.AlwaysHealthy)
	return !builtin
}

func (s *slot) healthKey() string { return protocol.HealthKey(s.w.cfg.ID, s.dev.ID) }

// loadHealth reads the board's record at start; a quarantine recorded
// before the restart puts the slot out of service again.
func (s *slot) loadHealth(ctx context.Context) {
	if !s.board() || s.w.topo == nil || s.w.topo.Health == nil {
		return
	}
	h := &protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: s.w.cfg.ID, Device: s.dev.ID, Pool: s.dev.Pool}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := s.w.topo.Health.Get(gctx, s.healthKey())
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		s.log.Warn().Err(err).Msg("board health not read; starting with an empty history")
	default:
		if err := json.Unmarshal(e.Value(), h); err != nil {
			s.log.Warn().Err(err).Msg("board health record unreadable; starting with an empty history")
			h = &protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: s.w.cfg.ID, Device: s.dev.ID, Pool: s.dev.Pool}
		}
	}
	s.mu.Lock()
	s.hist = h
	s.mu.Unlock()
	if h.Quarantined {
		s.log.Warn().Str("reason", h.Reason).Time("since", h.Since).Msg("board still quarantined from before; `benchfleet fleet release` returns it")
		s.setState(protocol.DeviceQuarantined, "", "", fmt.Sprintf("%s (since %s; release with: benchfleet fleet release %s %s)",
			h.Reason, h.Since.UTC().Format(time.RFC3339), s.w.cfg.ID, s.dev.ID))
	}
}

// record adds an event to the board's history and stores it. quarantine,
// when not nil, also records the board leaving service with that reason,
// and record returns once that is stored. Other events are stored in the
// background (healthWriter): a pass recorded after every job costs the slot
// no round trip to NATS between two jobs.
func (s *slot) record(kind, job string, quarantine error) {
	if !s.board() {
		return
	}
	s.mu.Lock()
	h := s.hist
	if h == nil {
		s.mu.Unlock()
		return
	}
	now := time.Now().UTC()
	h.Record(protocol.HealthEvent{Time: now, Kind: kind, Job: job})
	if quarantine != nil {
		h.Quarantined, h.Reason, h.Since = true, quarantine.Error(), now
	}
	data, err := json.Marshal(h)
	s.mu.Unlock()
	if err != nil {
		return
	}
	v := s.healthW.store(data)
	if quarantine != nil {
		s.healthW.wait(v)
	}
}

// putHealth stores one snapshot of the board's record.
func (s *slot) putHealth(data []byte) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.w.runCtx), 10*time.Second)
	defer cancel()
	if _, err := s.w.topo.Health.Put(ctx, s.healthKey(), data); err != nil {
		s.log.Warn().Err(err).Msg("board health not stored")
	}
}

// healthWriter stores a board's health record off the slot's path. Each
// snapshot is the whole record, so only the newest matters: store hands it
// over and returns; one goroutine at a time writes the newest snapshot
// until none is newer, so a burst of events costs one write and writes
// never land out of order. wait returns once a given snapshot (or a newer
// one) is stored.
type healthWriter struct {
	put func([]byte)

	mu      sync.Mutex
	cond    *sync.Cond
	latest  []byte
	version uint64 // snapshots handed in
	written uint64 // the newest stored
	running bool
}

func newHealthWriter(put func([]byte)) *healthWriter {
	h := &healthWriter{put: put}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// store hands in a snapshot and returns its version.
func (h *healthWriter) store(data []byte) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version++
	h.latest = data
	if !h.running {
		h.running = true
		go h.write()
	}
	return h.version
}

func (h *healthWriter) write() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.written < h.version {
		data, v := h.latest, h.version
		h.mu.Unlock()
		h.put(data)
		h.mu.Lock()
		h.written = v
		h.cond.Broadcast()
	}
	h.running = false
}

// wait returns once snapshot v or a newer one is stored (or its write
// failed: the failure is logged by put).
func (h *healthWriter) wait(v uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.written < v {
		h.cond.Wait()
	}
}

// flush waits until every snapshot handed in so far is stored.
func (h *healthWriter) flush() {
	h.mu.Lock()
	v := h.version
	h.mu.Unlock()
	h.wait(v)
}

// counts is the board's outcomes over the last protocol.HealthWindow.
func (s *slot) counts() *protocol.HealthCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist == nil {
		return nil
	}
	c := s.hist.Counts(time.Now(), protocol.HealthWindow)
	return &c
}

// watchReleases returns quarantined boards to service when an operator
// releases them (their bench-health record is no longer quarantined, or
// is deleted). It runs until ctx ends (counted in w.watchers).
func (w *Worker) watchReleases(ctx context.Context) error {
	if w.topo.Health == nil {
		return nil
	}
	boards := map[string]*slot{}
	for _, s := range w.slots {
		if s.board() {
			boards[s.healthKey()] = s
		}
	}
	if len(boards) == 0 {
		return nil
	}
	wa, err := w.topo.Health.Watch(ctx, w.cfg.ID+".*", jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("worker: watch %s: %w", protocol.BucketHealth, err)
	}
	w.watchers.Add(1)
	go func() {
		defer w.watchers.Done()
		defer wa.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-wa.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				s := boards[e.Key()]
				if s == nil {
					continue
				}
				// Only an operator's release counts: the record's last event
				// is a release (producer.ReleaseBoard), or the record was
				// deleted. The worker's own writes (a reset recorded just
				// before a quarantine, say) are not releases.
				released := e.Operation() != jetstream.KeyValuePut
				if !released {
					var h protocol.DeviceHealth
					released = json.Unmarshal(e.Value(), &h) == nil && !h.Quarantined &&
						len(h.Events) > 0 && h.Events[len(h.Events)-1].Kind == protocol.HealthRelease
				}
				if released {
					s.release()
				}
			}
		}
	}()
	return nil
}

// release tells a quarantined board's slot that an operator released it;
// the slot checks the board and returns it to service only when the check
// passes (slot.loop, returnToService).
func (s *slot) release() {
	s.mu.Lock()
	quarantined := s.state == protocol.DeviceQuarantined
	if quarantined && s.hist != nil {
		s.hist.Quarantined, s.hist.Reason, s.hist.Since = false, "", time.Time{}
	}
	s.mu.Unlock()
	if !quarantined {
		return
	}
	s.log.Info().Msg("board released by an operator: checking it")
	select {
	case s.released <- struct{}{}:
	default:
	}
}

// returnToService puts a released board that passed its check back in
// service.
func (s *slot) returnToService() {
	s.mu.Lock()
	s.state, s.reason, s.streak = protocol.DeviceIdle, "", 0
	s.mu.Unlock()
	s.log.Info().Msg("released board healthy: back in service")
	s.w.kickStatus()
}

// healthKind is the history kind of a failure.
func healthKind(failure error) string {
	if failure == nil {
		return protocol.HealthPass
	}
	if device.IsHang(failure) { // a timeout is a hang (attemptState.run)
		return protocol.HealthHang
	}
	return protocol.HealthInfra
}
