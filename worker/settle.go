package worker

// The settle of a delivery: what it came to (an outcome), how that is
// decided (classifyRun, classifyDelivery, retryOrDead: pure functions), and
// the one place a job's message is kept alive, acked, handed back or
// terminated (claimKeeper and the attemptState methods below).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/metrics"
)

// action is what becomes of a delivery's message.
type action int

const (
	// actRecord makes the outcome's result durable, acks, then publishes
	// the terminal event; a result that cannot be made durable sends the
	// job back (classifyDelivery).
	actRecord action = iota
	// actAck acks: the job's result is recorded already.
	actAck
	// actRetry hands the job back for redelivery after a delay (an
	// infrastructure failure), or dead-letters it when no counted delivery
	// is left (retryOrDead).
	actRetry
	// actDead dead-letters the job, records the dead letter's result and
	// terminates the message.
	actDead
	// actTerm dead-letters a payload that owns no result (an invalid job
	// whose id or run is not valid, or not its content's) and terminates
	// the message.
	actTerm
	// actUnrecordable hands the job back: this host cannot record results
	// now, which is not the job's fault.
	actUnrecordable
	// actStoreDown hands the job back: the store did not serve what it
	// needs before it can run (a wheel of its build), which is not the
	// job's fault.
	actStoreDown
	// actHandBack hands the job back at once: the worker is stopping hard.
	actHandBack
	// actPass hands the job back after a short delay, for a board of
	// another worker: this board is one the job avoids (Job.Avoid).
	actPass
	// actPassedOn leaves the message alone: another slot of this worker
	// took it.
	actPassedOn
)

// outcome is what one delivery came to: everything the settler needs to
// record it and settle its message.
type outcome struct {
	act action
	// result and files are the result to make durable and its artifacts
	// (actRecord).
	result *protocol.Result
	files  []storage.ArtifactFile
	// reason is the dead letter's reason (actDead, actTerm; actRecord: an
	// invalid job, dead-lettered before its result is recorded; actPass:
	// why the job is handed back, for the log) and pool the pool it is
	// filed under.
	reason string
	pool   string
	// cause is why the job goes back (actRetry, actUnrecordable), delay how
	// long until it is redelivered (actRetry, actPass).
	cause error
	delay time.Duration
	// failure is the infrastructure failure the slot's health follows
	// (slot.after), nil if none; a *device.JobError is the job's own
	// failure on a board that passed its check after it (no strike).
	failure error
	// window: settled in the background once the slot's next claim is
	// made (settleLater), so the device takes its next job at once.
	window bool
	// cleanup removes what the attempt left on disk, once it is settled.
	cleanup func()
}

// runClass is what a runner's return says about the attempt.
type runClass int

const (
	runMeasured  runClass = iota // figures to judge: passed, or failed on PCC
	runStopped                   // the worker is stopping hard
	runCancelled                 // the job's run was cancelled while it ran
	runInvalid                   // the job cannot run (device.InvalidError)
	runBenchmark                 // the benchmark failed (device.BenchmarkError)
	runJobFault                  // the job crashed or hit a box limit (device.JobError): the board is checked before it is blamed
	runHostFault                 // the host cannot run the harness (device.HostError)
	runStoreDown                 // the store did not serve what the job needs (device.StoreError): handed back, excused
	runInfra                     // an infrastructure failure: retried
)

// classifyRun says what a runner's return means: out and runErr as Run
// returned them, cause the job context's cause (nil while it was not done:
// the runner returned in time), stopping whether the worker is stopping
// hard. The error returned is the one to act on: runErr, or for runInfra
// the failure to retry with (a runner that returned nothing is one; a
// timeout is a hang).
func classifyRun(out *device.Outcome, runErr, cause error, stopping bool) (runClass, error) {
	var inv *device.InvalidError
	var bench *device.BenchmarkError
	var host *device.HostError
	var jobErr *device.JobError
	switch {
	case stopping:
		return runStopped, nil
	case errors.Is(cause, errRunCancelled):
		return runCancelled, nil
	case runErr == nil && out == nil:
		return runInfra, device.Infra("runner returned no outcome")
	case runErr == nil:
		return runMeasured, nil
	case errors.As(runErr, &inv):
		return runInvalid, runErr
	case errors.As(runErr, &bench):
		return runBenchmark, runErr
	case cause != nil && errors.Is(runErr, context.DeadlineExceeded):
		return runInfra, device.Hang("%v", cause) // "job timed out after ..."
	case errors.As(runErr, &jobErr):
		return runJobFault, runErr
	case errors.As(runErr, &host):
		return runHostFault, runErr
	case device.IsStore(runErr):
		return runStoreDown, runErr
	}
	return runInfra, runErr
}

// classifyDelivery says what becomes of a message whose result's delivery
// (Sink.Deliver) returned err: actAck once the result is durable (err nil,
// or an earlier attempt's is there: storage.ErrExists); else the job goes
// back, at once when the worker is stopping hard (actHandBack), excused
// when this host cannot record results now (actUnrecordable), or as an
// infrastructure failure (actRetry).
func classifyDelivery(err error, stopping bool) action {
	switch {
	case err == nil || errors.Is(err, storage.ErrExists):
		return actAck
	case stopping:
		return actHandBack
	case unrecordable(err):
		return actUnrecordable
	}
	return actRetry
}

// retryOrDead says whether a job that failed on its counted-th delivery
// is retried (actRetry) or, with no delivery left of maxDeliver, dead-
// lettered (actDead).
func retryOrDead(counted, maxDeliver int) action {
	if counted >= maxDeliver {
		return actDead
	}
	return actRetry
}

// avoidPasses is how many deliveries of a job a board it avoids hands back
// for another worker's board (actPass); from the next one on it runs the
// job itself. avoidPassDelay is how long each pass leaves the job to others.
const (
	avoidPasses    = 3
	avoidPassDelay = time.Second
)

// passes is how many deliveries before this one may have been passes: a
// job that avoids boards is passed on only within its first avoidPasses
// deliveries, by whichever worker, and a worker cannot tell another's pass
// from a failure there, so each of them is taken for one. None counts
// against MaxDeliver. Only a confirmation repeat (Job.Repeat > 0: the
// producer gives Avoid to repeats only) is passed on (slot.avoided), so
// any other job has no passes: its Avoid buys it no extra deliveries.
func (a *attemptState) passes() int {
	if a.job == nil || !avoids(a.job) {
		return 0
	}
	return max(0, min(a.deliveries-1, avoidPasses))
}

// avoids reports whether job is one whose Avoid a board honours: a
// confirmation repeat naming boards to avoid.
func avoids(job *protocol.Job) bool { return job.Repeat > 0 && len(job.Avoid) > 0 }

// passesNote says how many of the deliveries were taken for passes (and so
// not counted against MaxDeliver), for a dead letter's reason; "" if none.
func (a *attemptState) passesNote() string {
	switch p := a.passes(); p {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (1 more delivery, within the first %d, was taken for a pass by a board the job avoids and not counted)", avoidPasses)
	default:
		return fmt.Sprintf(" (%d more deliveries, within the first %d, were taken for passes by boards the job avoids and not counted)", p, avoidPasses)
	}
}

// settle settles one delivery by its outcome, then ends the attempt (the
// claim's heartbeat, the attempt's files) and counts the job done, unless
// it was passed on. An outcome for the window is settled in the background
// after the slot's next claim (settleLater).
func (s *slot) settle(a *attemptState, o outcome) {
	ctx := s.w.runCtx
	finish := func() {
		a.settle(ctx, o)
		a.hb.stop()
		if o.cleanup != nil {
			o.cleanup()
		}
		if o.act == actPass || o.act == actPassedOn {
			return
		}
		s.mu.Lock()
		s.completed++
		s.mu.Unlock()
		s.w.kickStatus()
	}
	if o.window {
		s.settleLater(finish)
		return
	}
	finish()
}

// settleWindow bounds the jobs of one slot being settled in the background
// at once. More than one lets a slot whose jobs are shorter than a result
// write run ahead, and lets the file store's group commit share one flush
// among more writes; a slow store still slows the slot down (settleLater
// waits for room) rather than piling up results in memory.
const settleWindow = 4

// settleLater queues settle to run in the background, so the device can
// take its next job while its last ones are being recorded; at most
// settleWindow at a time per slot. The slot's loop starts it
// (startSettles) right after its next claim, so a fetch does not wait
// behind the last job's writes: the next job is the device's time, the
// settle only bookkeeping.
func (s *slot) settleLater(settle func()) {
	s.startSettles() // none expected: each claim starts them
	s.settling <- struct{}{}
	s.settles.Add(1)
	s.queued = append(s.queued, func() {
		defer s.settles.Done()
		defer func() { <-s.settling }()
		settle()
	})
}

// startSettles starts the settles settleLater queued (slot loop only).
func (s *slot) startSettles() {
	for _, f := range s.queued {
		go f()
	}
	s.queued = s.queued[:0]
}

// settled starts any queued settle and waits until no job of the slot is
// settling in the background.
func (s *slot) settled() {
	s.startSettles()
	s.settles.Wait()
}

// settle carries out o for the delivery. It and the methods it calls are
// the only code that acks, hands back (Nak) or terminates a job's message.
func (a *attemptState) settle(ctx context.Context, o outcome) {
	switch o.act {
	case actRecord:
		a.record(ctx, o)
	case actAck:
		a.log.Info().Msg("result already recorded; acknowledging the duplicate delivery")
		a.ack(ctx)
		a.forgetHostFaults(ctx)
	case actRetry:
		a.retry(ctx, o.cause, o.delay)
	case actDead:
		a.dead(ctx, o.reason)
	case actTerm:
		a.log.Warn().Str("reason", o.reason).Msg("invalid job dead-lettered")
		if err := a.deadLetterPool(ctx, o.pool, o.reason); err != nil {
			a.handBack(ctx, o.reason, err)
			return
		}
		a.term(o.reason)
	case actUnrecordable:
		a.handBackUnrecorded(ctx, o.cause)
	case actStoreDown:
		a.handBackStoreDown(ctx, o.cause)
	case actHandBack:
		a.log.Warn().Msg("worker stopping: job handed back for redelivery")
		a.nak()
	case actPass:
		why := o.reason
		if why == "" {
			why = "the job avoids this board: handed back for another worker's board"
		}
		a.log.Info().Dur("delay", o.delay).Msg(why)
		a.nakAfter(o.delay)
	case actPassedOn:
	}
}

// record makes the outcome's result durable, then acks, then publishes the
// terminal event. A result that cannot be made durable sends the job back
// (classifyDelivery).
func (a *attemptState) record(ctx context.Context, o outcome) {
	r := o.result
	if o.reason != "" {
		// The result below is the job's record: a dead letter not
		// published is logged (deadLetterPool), not retried.
		_ = a.deadLetterPool(ctx, o.pool, o.reason)
	}
	if r.Upstream != "" {
		r.Upstream = storage.ArtifactKey(r.Run, r.Job, r.Attempt, r.Upstream)
	}
	// Each store call of the delivery has its own short deadline (the
	// spool's CallTimeout, or StoreCallTimeout without one): a store that
	// does not answer is a store that is down.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	key, spooled, err := a.s.w.cfg.Sink.Deliver(dctx, r, o.files)
	cancel()
	switch {
	case err == nil && spooled:
		a.s.w.rec.observe(errResultSpooled)
	case err == nil || errors.Is(err, storage.ErrExists):
		a.s.w.rec.observe(nil)
	case ctx.Err() == nil:
		a.s.w.rec.observe(err)
	}
	switch classifyDelivery(err, ctx.Err() != nil) {
	case actAck:
		if err != nil {
			a.log.Info().Msg("result already recorded by an earlier attempt; nothing new recorded")
			a.ack(ctx)
			a.s.w.excused.forget(r.Job)
			a.forgetHostFaults(ctx)
			return
		}
	case actHandBack:
		// As a running job is: a redelivery that finds the result after
		// all only acks.
		a.log.Warn().Err(err).Msg("worker stopping: result not stored; job handed back for redelivery")
		a.nak()
		return
	case actUnrecordable:
		// Neither the store nor the spool takes results: the host's fault,
		// not the job's. No dead letter; the slots claim nothing until a
		// result can be recorded again.
		a.s.w.metrics.StorageError(metrics.StorageOpDeliver)
		a.handBackUnrecorded(ctx, fmt.Errorf("result not stored: %w", err))
		return
	default:
		// An infrastructure failure like any other (storage down before
		// spooling): retried with backoff, and on the last delivery
		// dead-lettered with this reason, not left for the next delivery
		// to guess at.
		a.s.w.metrics.StorageError(metrics.StorageOpDeliver)
		a.log.Error().Err(err).Msg("result not durable")
		a.retry(ctx, fmt.Errorf("result not stored: %w", err), a.s.w.cfg.backoff(a.deliveries))
		return
	}
	kind := map[protocol.Status]protocol.EventKind{
		protocol.StatusPassed: protocol.EventPassed, protocol.StatusCancelled: protocol.EventCancelled,
	}[r.Status]
	if kind == "" {
		kind = protocol.EventFailed
	}
	msg := ""
	if r.Error != nil {
		msg = r.Error.Message
	}
	if spooled {
		msg = strings.TrimSpace(msg + " " + protocol.SpooledNote)
	}
	a.s.w.metrics.Recorded(r, spooled)
	// Ack before the terminal event: a waiter that acts on the event (and,
	// say, stops the worker) finds the job already settled.
	a.ack(ctx)
	a.s.w.failed.forget(r.Job)
	a.s.w.excused.forget(r.Job)
	a.forgetHostFaults(ctx)
	a.event(ctx, protocol.Event{Kind: kind, Status: r.Status, Result: key, ResultSpooled: spooled, Message: msg,
		SamplesPerSec: r.Measurements.SamplesPerSec, PCC: r.PCC.Value})
	a.log.Info().Str("status", string(r.Status)).Float64("samples_per_sec", r.Measurements.SamplesPerSec).
		Float64("pcc", r.PCC.Value).Bool("spooled", spooled).Msg("job finished")
}

// retry handles an infrastructure failure (cause): redelivery after delay,
// or a dead letter when no counted delivery is left.
func (a *attemptState) retry(ctx context.Context, cause error, delay time.Duration) {
	if retryOrDead(a.counted(), a.s.w.cfg.MaxDeliver) == actDead {
		what := fmt.Sprintf("the last of %d attempts", a.s.w.cfg.MaxDeliver)
		if a.attempt != a.deliveries { // re-queued by dlq retry: attempts count on
			what = fmt.Sprintf("attempt %d, the last of %d since it was re-queued", a.attempt, a.s.w.cfg.MaxDeliver)
		}
		a.dead(ctx, fmt.Sprintf("infrastructure failure on %s%s: %v", what, a.passesNote(), cause))
		return
	}
	a.log.Warn().Err(cause).Dur("delay", delay).Msg("infrastructure failure; job will be retried")
	a.retrying(ctx, fmt.Sprintf("%v (retry in %s)", cause, delay), delay)
}

// handBackUnrecorded hands back a job whose result this host cannot record
// now (the store does not answer and there is no spool, or the spool
// refuses writes): a full disk is the host's fault, not the job's, so no
// dead letter is written and this delivery does not count against
// MaxDeliver here (attemptState.excused, from Worker.excused). Recording is marked blocked, so the
// worker's slots claim nothing until a result can be recorded again.
func (a *attemptState) handBackUnrecorded(ctx context.Context, cause error) {
	s := a.s
	s.w.rec.block(cause)
	s.w.excused.add(a.job.ID)
	delay := s.w.cfg.Backoff
	a.log.Error().Err(cause).Dur("delay", delay).Msg("this worker cannot record results now: job handed back, no dead letter")
	a.retrying(ctx, fmt.Sprintf("%v: this worker cannot record results now and claims nothing until it can; the job is handed back (retry in %s)", cause, delay), delay)
}

// handBackStoreDown hands back a job whose build the store did not serve
// (a wheel it refused, failed or hung on): the store's fault, not the
// job's nor the board's. As with a result that cannot be recorded
// (handBackUnrecorded), no dead letter is written and the delivery does
// not count against MaxDeliver here; the store is marked not answering
// (status, /healthz, the store gauge) until the worker's probe finds it
// answering. The job comes back after a backoff that grows with the
// deliveries so excused.
func (a *attemptState) handBackStoreDown(ctx context.Context, cause error) {
	s := a.s
	s.w.rec.observe(fmt.Errorf("%w: %v", storage.ErrUnavailable, cause))
	s.w.excused.add(a.job.ID)
	delay := s.w.cfg.backoff(a.excused + 1)
	a.log.Warn().Err(cause).Dur("delay", delay).Msg("the store did not serve the job's build: job handed back, its delivery not counted")
	a.retrying(ctx, fmt.Sprintf("%v: the store's fault, not the job's; handed back without using a delivery (retry in %s)", cause, delay), delay)
}

// retrying hands the job back for redelivery after delay, with a retrying
// event saying why.
func (a *attemptState) retrying(ctx context.Context, why string, delay time.Duration) {
	a.s.w.metrics.Retried(a.job.Pool)
	a.event(ctx, protocol.Event{Kind: protocol.EventRetrying, Message: why})
	a.nakAfter(delay)
}

// dead dead-letters a job that ran out of deliveries, records the dead
// letter's error result (recordDead; a deliberate `dlq retry` can still
// produce a result that replaces it) and terminates the message.
func (a *attemptState) dead(ctx context.Context, reason string) {
	a.log.Error().Str("reason", reason).Msg("job dead-lettered")
	a.s.w.failed.forget(a.job.ID)
	a.s.w.excused.forget(a.job.ID)
	if err := a.deadLetter(ctx, reason); err != nil {
		a.handBack(ctx, reason, err)
		return
	}
	a.recordDead(ctx, reason)
	a.forgetHostFaults(ctx)
	a.event(ctx, protocol.Event{Kind: protocol.EventDead, Message: reason})
	a.term(reason)
}

// handBack returns a job whose dead letter could not be stored (e.g. while
// BENCH_DEAD elects a leader): terminating it would lose it, with neither a
// result nor a dead letter. A later delivery dead-letters it again. When
// the dead letter can never be stored (too big for the server or the
// stream even with only the payload's first bytes), handing back would go
// on forever: then MaxDeliver holds, and after its last delivery the job is
// terminated with the reason (logged and as a dead event).
func (a *attemptState) handBack(ctx context.Context, reason string, err error) {
	if tooBig(err) && a.counted() >= a.s.w.cfg.MaxDeliver {
		why := fmt.Sprintf("%s; its dead letter is too big to store (%v), so after %d deliveries%s it is dropped", reason, err, a.deliveries, a.passesNote())
		a.log.Error().Str("reason", why).Msg("job terminated without a dead letter")
		a.recordDead(ctx, why)
		a.event(ctx, protocol.Event{Kind: protocol.EventDead, Message: why})
		a.term(why)
		return
	}
	a.log.Warn().Err(err).Msg("dead letter not stored; job handed back to dead-letter it again later")
	a.nakAfter(a.s.w.cfg.backoff(a.attempt))
}

// ack acknowledges the message: the job's result is durable.
func (a *attemptState) ack(ctx context.Context) {
	// The ack completes even when the worker is stopping hard (ctx
	// cancelled), so the job is not delivered again.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.msg.DoubleAck(actx); err != nil {
		// The result is durable; a redelivery will find it and ack.
		a.log.Warn().Err(err).Msg("ack not confirmed")
	}
}

// nak hands the job back for redelivery at once.
func (a *attemptState) nak() { _ = a.msg.Nak() }

// nakAfter hands the job back for redelivery after delay.
func (a *attemptState) nakAfter(delay time.Duration) {
	if err := a.msg.NakWithDelay(delay); err != nil {
		a.log.Warn().Err(err).Msg("nak not sent; the job is redelivered after ack-wait")
	}
	// The job is back in its queue once the delay is over: the pool's
	// slots must not skip its priority as empty then.
	if q, err := protocol.ParseQueue(a.msg.Subject()); err == nil {
		hint, i := a.s.hint, slices.Index(protocol.PoolQueues(q.Pool), q)
		time.AfterFunc(delay, func() { hint.publishedTo(i) })
	}
}

// term terminates the message: the job is never delivered again.
func (a *attemptState) term(reason string) { _ = a.msg.TermWithReason(truncate(reason, 200)) }

// claimKeeper sends InProgress every Heartbeat until stopped.
type claimKeeper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// keepClaim starts the claim's heartbeat. It runs from the delivery's first
// moment, before any store call, dead letter or run: a slow store must not
// let the claim lapse while this slot holds the job (the job would be
// delivered to another slot and run twice). The settle stops it.
func (a *attemptState) keepClaim(ctx context.Context) *claimKeeper {
	hctx, cancel := context.WithCancel(ctx)
	k := &claimKeeper{cancel: cancel, done: make(chan struct{})}
	s, msg := a.s, a.msg
	go func() {
		defer close(k.done)
		t := time.NewTicker(s.w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					s.w.metrics.HeartbeatFailed(metrics.HeartbeatInProgress)
					s.log.Debug().Err(err).Msg("in-progress not sent")
				}
			}
		}
	}()
	return k
}

// release stops the heartbeat without waiting for it.
func (k *claimKeeper) release() { k.cancel() }

// stop stops the heartbeat and waits until it sends no more.
func (k *claimKeeper) stop() {
	k.cancel()
	<-k.done
}
