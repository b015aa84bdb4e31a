package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/boardhealth"
)

// A Tenstorrent board's lasting health lives in the bench-health bucket
// (package boardhealth). Built-in slots keep none (they have no board).

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
	h := boardhealth.Load(ctx, s.w.topo.Health, s.w.cfg.ID, s.dev.ID, s.dev.Pool, s.log)
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
// background (boardhealth.Writer): a pass recorded after every job costs
// the slot no round trip to NATS between two jobs.
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
	v := s.healthW.Store(data)
	if quarantine != nil {
		s.healthW.Wait(v)
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
	err := boardhealth.WatchReleases(ctx, w.topo.Health, w.cfg.ID, &w.watchers, func(key string) {
		if s := boards[key]; s != nil {
			s.release()
		}
	})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
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
