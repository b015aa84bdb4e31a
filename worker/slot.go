package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/boardhealth"
)

// slot serves one device: it fetches one job at a time, only while the
// device is free and healthy, highest priority first.
type slot struct {
	w       *Worker
	dev     device.Device
	runner  device.Runner
	health  device.Health
	sampler device.Sampler
	log     zerolog.Logger

	consumers []jetstream.Consumer // the pool's queues, protocol.PoolQueues order
	hint      *emptyHint           // the pool's: which priorities were just found empty
	wake      chan struct{}
	done      chan struct{}
	// handoff receives a job another slot of the pool passed on because
	// its own board failed that job before, or the job avoids it (see
	// Worker.passOn).
	handoff chan jetstream.Msg
	// settling holds a token per job of the slot being settled in the
	// background (settleLater): at most settleWindow; settles counts them
	// for settled.
	settling chan struct{}
	settles  sync.WaitGroup
	// queued: settles taken by settleLater and not started yet; the slot's
	// loop starts them (startSettles) once its next claim is made, so the
	// claim does not share the moment with their writes (loop only).
	queued []func()

	mu        sync.Mutex
	state     string
	job, run  string
	reason    string
	completed int64                  // deliveries settled here, not those passed on (slot.settle counts them)
	waiting   bool                   // idle in loop's select, not fetching: may take a handoff
	streak    int                    // consecutive infrastructure failures (see maxInfraStreak)
	lastJob   string                 // the job the last handle ran ("" if it ran none)
	hist      *protocol.DeviceHealth // the board's lasting health (boards only)
	healthW   *boardhealth.Writer    // stores hist (boards only)
	released  chan struct{}          // an operator released the quarantined board
}

// maxInfraStreak is how many infrastructure failures in a row (hangs,
// timeouts, crashes the board check or probe confirmed; over any jobs)
// take a Tenstorrent board out of service even when its health check
// still passes: a board that keeps failing while the others of its pool
// do not is a bad board, and each failure costs a job an attempt. A job
// that fails by its own doing on a board that passes its check (a
// *device.JobError) neither counts nor resets the count; any other
// outcome (passed, failed benchmark, invalid job) resets it.
const maxInfraStreak = 3

func newSlot(w *Worker, s Slot) *slot {
	sl := &slot{
		w: w, dev: s.Device, runner: s.Runner, health: s.Health, sampler: s.Sampler,
		log:      w.log.With().Str("device", s.Device.ID).Str("pool", s.Device.Pool).Logger(),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		handoff:  make(chan jetstream.Msg, 1),
		settling: make(chan struct{}, settleWindow),
		released: make(chan struct{}, 1),
		state:    protocol.DeviceIdle,
	}
	sl.healthW = boardhealth.NewWriter(sl.putHealth)
	return sl
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
	st := protocol.DeviceStatus{
		ID: s.dev.ID, Pool: s.dev.Pool, Runner: s.runner.Name(), Arch: s.dev.Arch, Chips: s.dev.Chips,
		State: s.state, Job: s.job, Run: s.run, Reason: s.reason, Done: s.completed,
	}
	if s.hist != nil {
		c := s.hist.Counts(time.Now(), protocol.HealthWindow)
		st.Health = &c
	}
	return st
}

// loop claims and runs jobs until the worker stops claiming. It returns
// once the last job's result is settled.
func (s *slot) loop() {
	defer close(s.done)
	defer s.healthW.Flush()
	defer s.settled()
	claim := s.w.claimCtx
	s.loadHealth(claim)
	if !s.outOfService() {
		if err := s.checkHealth(claim); err != nil {
			s.quarantine(err)
		}
	}
	empty := 0 // fetches in a row that found nothing
	for claim.Err() == nil {
		if s.outOfService() {
			s.startSettles() // no claim to wait for
			select {
			case <-claim.Done():
				return
			case <-s.released:
				if err := s.checkHealth(claim); err != nil {
					s.quarantine(fmt.Errorf("released, but still unhealthy: %w", err))
				} else {
					s.returnToService()
				}
				continue
			}
		}
		// While results cannot be recorded (the store does not answer and
		// the spool, if any, refuses writes) the slot claims nothing: a job
		// claimed now could only be handed back.
		if why, resumed := s.w.rec.blockedBy(); why != nil {
			s.startSettles() // no claim to wait for
			s.setState(protocol.DeviceIdle, "", "", "not claiming: cannot record results: "+why.Error())
			select {
			case <-claim.Done():
				return
			case <-resumed:
			}
			s.setState(protocol.DeviceIdle, "", "", "")
			continue
		}
		var msg jetstream.Msg
		var err error
		select {
		case msg = <-s.handoff:
		default:
			msg, err = s.next(claim)
			if claim.Err() == nil {
				s.w.jsGate.observe(jsFetch, err)
			}
		}
		// The next job is claimed (or none is queued): the last job's
		// settle goes now, no longer sharing the moment with the claim.
		s.startSettles()
		if err != nil {
			if claim.Err() != nil {
				return
			}
			s.log.Debug().Err(err).Msg("fetch failed; retrying")
			sleepCtx(claim, time.Second)
			continue
		}
		if msg == nil {
			// A fetch can come back empty while jobs are queued (the
			// server was still handing one to another slot): look again
			// soon, backing off to IdlePoll, so a busy queue never waits a
			// whole poll and an idle slot stays quiet.
			recheck := min(s.w.cfg.IdlePoll, time.Millisecond<<min(empty, 10))
			empty++
			s.setWaiting(true)
			select {
			case <-claim.Done():
			case <-s.wake:
			case <-time.After(recheck):
			case msg = <-s.handoff:
			}
			s.setWaiting(false)
			if msg == nil {
				continue
			}
		}
		empty = 0
		if s.outOfService() {
			// The slot left service while its fetch was out (another
			// slot's job said this host cannot run the harness): the job
			// goes back at once for another host, its delivery not
			// counted here.
			s.handBackUnrun(msg)
			continue
		}
		failure := s.handle(msg)
		if !s.outOfService() {
			s.setState(protocol.DeviceIdle, "", "", "")
		}
		s.after(failure)
	}
}

// after updates the board's health after a job: a hang or timeout resets
// it (its tt-smi snapshot can still list a board that hung), another
// infrastructure failure checks it and resets it if bad; a board still bad
// after a reset, or with maxInfraStreak infrastructure failures in a row,
// leaves service. A host fault takes every slot of the runner out. A job
// that failed by its own doing on a board that passed its check after it
// (a *device.JobError, see attemptState.run) is only noted in the board's
// history.
func (s *slot) after(failure error) {
	s.mu.Lock()
	job := s.lastJob
	s.mu.Unlock()
	if failure == nil {
		s.mu.Lock()
		s.streak = 0
		s.mu.Unlock()
		if job != "" {
			s.record(protocol.HealthPass, job, nil)
		}
		return
	}
	var jf *device.JobError
	if errors.As(failure, &jf) {
		// The job's own doing, and the board passed its check (and probe)
		// after it: no reset, no strike; the streak neither grows nor
		// starts again (a job that fails by itself says nothing good of
		// the board either).
		s.record(protocol.HealthJob, job, nil)
		return
	}
	var host *device.HostError
	if errors.As(failure, &host) {
		s.w.hostFault(s.runner, host)
		return
	}
	if device.IsSetup(failure) {
		return // the job's build was not made: the board ran nothing
	}
	s.record(boardhealth.Kind(failure), job, nil)
	s.mu.Lock()
	s.streak++
	streak := s.streak
	s.mu.Unlock()
	if err := s.recoverDevice(s.w.runCtx, device.IsHang(failure)); err != nil {
		s.quarantine(err)
		return
	}
	// Built-in slots have no board to blame (their faults are the job's).
	if _, builtin := s.health.(device.AlwaysHealthy); !builtin && streak >= maxInfraStreak {
		s.quarantine(fmt.Errorf("%d infrastructure failures in a row (last: %v)", streak, failure))
	}
}

func (s *slot) setWaiting(v bool) {
	s.mu.Lock()
	s.waiting = v
	s.mu.Unlock()
}

// offer gives msg to s if s is idle and waiting for work (not fetching);
// it reports whether s took it, and whether s is idle at all (no job, in
// service): an idle slot that did not take it is between fetches and will
// wait again within moments.
func (s *slot) offer(msg jetstream.Msg) (took, idle bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != protocol.DeviceIdle || s.reason != "" {
		return false, false
	}
	if !s.waiting {
		return false, true
	}
	select {
	case s.handoff <- msg:
		s.waiting = false
		return true, true
	default:
		return false, true
	}
}

// handBackUnrun hands back a job this slot claimed but will not run (it
// left service during the fetch), excused from MaxDeliver here as a
// delivery the worker's own state turned away. Its id is the message's
// Nats-Msg-Id, as submit publishes it.
func (s *slot) handBackUnrun(msg jetstream.Msg) {
	if id := msg.Headers().Get(nats.MsgIdHdr); id != "" {
		s.w.excused.add(id)
	}
	if err := msg.Nak(); err != nil {
		s.log.Warn().Err(err).Msg("nak not sent; the job is redelivered after ack-wait")
	}
}

func (s *slot) outOfService() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == protocol.DeviceQuarantined
}

// next fetches at most one job, trying the pool's queues in order (high,
// normal, untrusted normal, low, untrusted low: protocol.PoolQueues). It
// returns nil when none is queued. A priority the pool's slots just found
// empty, with no job published to it since, is skipped (see emptyHint).
func (s *slot) next(ctx context.Context) (jetstream.Msg, error) {
	type empty struct {
		i    int
		seen uint64
		at   time.Time
	}
	var empties []empty // recorded only if a lower priority has a job
	for i, c := range s.consumers {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		at := time.Now()
		if s.hint.skip(i, at) {
			continue
		}
		seen := s.hint.seen(i)
		batch, err := c.FetchNoWait(1)
		if err != nil {
			return nil, err
		}
		for msg := range batch.Messages() {
			for _, e := range empties {
				s.hint.foundEmpty(e.i, e.seen, e.at)
			}
			return msg, nil
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
		empties = append(empties, empty{i, seen, at})
	}
	return nil, nil
}

func (s *slot) checkHealth(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.health.Check(hctx, s.dev)
}

// probeTimeout bounds a host-fault probe (a known-good job at batch 1,
// loop 1: its compile dominates).
const probeTimeout = 30 * time.Minute

// confirmHostFault runs the runner's probe (a known-good job) or, without
// one, the board's health check: confirmed is true when it fails, probed
// when a probe is configured. why says what was run and how it went.
func (s *slot) confirmHostFault(ctx context.Context) (confirmed, probed bool, why string) {
	if p, ok := s.runner.(device.Prober); ok {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		configured, err := p.Probe(pctx, s.dev)
		switch {
		case configured && err != nil:
			return true, true, "confirmed: " + err.Error()
		case configured:
			return false, true, "the health probe passes on this host"
		}
	}
	if err := s.checkHealth(ctx); err != nil {
		return true, false, "confirmed: the board check fails: " + err.Error()
	}
	return false, false, "no health probe configured and the board check passes"
}

// checkAfterJobFault checks the board after a job that brought about its
// own end (a *device.JobError): its health check, then the runner's probe
// when it has one configured (probed). nil means both passed: the failure
// is the job's alone. Else the error says which failed.
func (s *slot) checkAfterJobFault(ctx context.Context) (probed bool, err error) {
	if err := s.checkHealth(ctx); err != nil {
		return false, fmt.Errorf("the board check fails: %w", err)
	}
	p, ok := s.runner.(device.Prober)
	if !ok {
		return false, nil
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	configured, err := p.Probe(pctx, s.dev)
	if configured && err != nil {
		return true, fmt.Errorf("the health probe fails: %w", err)
	}
	return configured, nil
}

// recoverDevice runs after an infrastructure failure: a health check, and if the
// device is bad (or hung: always), a reset followed by a second check (a
// reset can report success and still leave the device gone).
func (s *slot) recoverDevice(ctx context.Context, hung bool) error {
	if !hung {
		err := s.checkHealth(ctx)
		if err == nil {
			return nil
		}
		s.log.Warn().Err(err).Msg("device unhealthy after failure; resetting")
	} else {
		s.log.Warn().Msg("job hung or timed out on the device; resetting it before its next job")
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	rerr := s.health.Reset(rctx, s.dev)
	cancel()
	s.record(protocol.HealthReset, "", nil)
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

// quarantine takes the board out of service and records it in bench-health,
// so it stays out across restarts until an operator releases it.
func (s *slot) quarantine(err error) {
	if s.w.runCtx.Err() != nil {
		return
	}
	s.log.Error().Err(err).Msg("device quarantined: it takes no more jobs until released (benchfleet fleet release)")
	// The lasting record first, then the state others see: whoever acts on
	// the reported quarantine (an operator's release, say) finds it stored.
	// The slot claims nothing meanwhile: this runs on its own loop.
	s.record(protocol.HealthQuarantine, "", err)
	s.setState(protocol.DeviceQuarantined, "", "", err.Error())
	s.notifyQuarantine(err)
	s.wakeUp()
}

// outOfServiceFor takes the slot out of service until the worker restarts,
// without a lasting quarantine: the cause is the host's (its harness
// environment), not the board's, and a restart checks it again.
func (s *slot) outOfServiceFor(err error) {
	if s.w.runCtx.Err() != nil {
		return
	}
	s.log.Error().Err(err).Msg("slot out of service until the worker restarts")
	s.setState(protocol.DeviceQuarantined, "", "", err.Error())
	s.notifyQuarantine(err)
	s.wakeUp()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
