package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// slot serves one device: it fetches one job at a time, only while the
// device is free and healthy, highest priority first.
type slot struct {
	w      *Worker
	dev    device.Device
	runner device.Runner
	health device.Health
	log    zerolog.Logger

	consumers []jetstream.Consumer // high, normal, low
	wake      chan struct{}
	done      chan struct{}

	mu        sync.Mutex
	state     string
	job, run  string
	reason    string
	completed int64
}

func newSlot(w *Worker, s Slot) *slot {
	return &slot{
		w: w, dev: s.Device, runner: s.Runner, health: s.Health,
		log:   w.log.With().Str("device", s.Device.ID).Str("pool", s.Device.Pool).Logger(),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		state: protocol.DeviceIdle,
	}
}

func (s *slot) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *slot) setState(state, job, run, reason string) {
	s.mu.Lock()
	s.state, s.job, s.run, s.reason = state, job, run, reason
	s.mu.Unlock()
	s.w.kickStatus()
}

func (s *slot) status() protocol.DeviceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return protocol.DeviceStatus{
		ID: s.dev.ID, Pool: s.dev.Pool, Runner: s.runner.Name(), Arch: s.dev.Arch, Chips: s.dev.Chips,
		State: s.state, Job: s.job, Run: s.run, Reason: s.reason, Done: s.completed,
	}
}

// loop claims and runs jobs until the worker stops claiming.
func (s *slot) loop() {
	defer close(s.done)
	claim := s.w.claimCtx
	if err := s.checkHealth(claim); err != nil {
		s.quarantine(err)
		<-claim.Done()
		return
	}
	for claim.Err() == nil {
		msg, err := s.next(claim)
		if err != nil {
			if claim.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Msg("fetch failed; retrying")
			sleepCtx(claim, time.Second)
			continue
		}
		if msg == nil {
			select {
			case <-claim.Done():
				return
			case <-s.wake:
			case <-time.After(s.w.cfg.IdlePoll):
			}
			continue
		}
		infraFailed := s.handle(msg)
		s.mu.Lock()
		s.completed++
		s.mu.Unlock()
		s.setState(protocol.DeviceIdle, "", "", "")
		if infraFailed {
			if err := s.recover(s.w.runCtx); err != nil {
				s.quarantine(err)
				<-claim.Done()
				return
			}
		}
	}
}

// next fetches at most one job, trying high, then normal, then low. It
// returns nil when none is queued.
func (s *slot) next(ctx context.Context) (jetstream.Msg, error) {
	for _, c := range s.consumers {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		batch, err := c.FetchNoWait(1)
		if err != nil {
			return nil, err
		}
		for msg := range batch.Messages() {
			return msg, nil
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
	}
	return nil, nil
}

func (s *slot) checkHealth(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.health.Check(hctx, s.dev)
}

// recover runs after an infrastructure failure: health check, and if the
// device is bad, a reset followed by a second check (a reset can report
// success and still leave the device gone).
func (s *slot) recover(ctx context.Context) error {
	if err := s.checkHealth(ctx); err == nil {
		return nil
	} else {
		s.log.Warn().Err(err).Msg("device unhealthy after failure; resetting")
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	rerr := s.health.Reset(rctx, s.dev)
	cancel()
	if rerr != nil {
		s.log.Warn().Err(rerr).Msg("device reset failed")
	}
	if err := s.checkHealth(ctx); err != nil {
		if rerr != nil {
			return fmt.Errorf("reset failed (%v) and health check failed: %w", rerr, err)
		}
		return fmt.Errorf("health check after reset: %w", err)
	}
	s.log.Info().Msg("device healthy after reset")
	return nil
}

func (s *slot) quarantine(err error) {
	if s.w.runCtx.Err() != nil {
		return
	}
	s.log.Error().Err(err).Msg("device quarantined: it takes no more jobs until the worker restarts")
	s.setState(protocol.DeviceQuarantined, "", "", err.Error())
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
