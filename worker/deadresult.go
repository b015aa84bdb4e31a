package worker

import (
	"context"
	"errors"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// recordDead makes the result a dead letter leaves durable: status error,
// class protocol.ClassDeadLetter, the reason and the attempt, through the
// worker's sink as every result (the store, or the spool while it is down;
// the record gate sees the store's answer). It is written once: a result
// already there (this job's dead letter's, written before a crash) is
// kept. A result that cannot be recorded is logged: the dead letter,
// published first, stays the job's record. A payload that is not a valid
// job of its own id gets no result (as invalid says).
func (a *attemptState) recordDead(ctx context.Context, reason string) {
	if j := a.job; j == nil || protocol.ValidID("id", j.ID) != nil || protocol.ValidID("run", j.Run) != nil || j.CheckID() != nil {
		return // a result is never recorded for an id the payload does not own
	}
	r := a.newResult(protocol.StatusError, &protocol.ResultError{Class: protocol.ClassDeadLetter, Message: reason})
	if r.RunCreatedAt.IsZero() {
		r.RunCreatedAt = a.started
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	_, spooled, err := a.s.w.cfg.Sink.Deliver(dctx, r, nil)
	cancel()
	switch {
	case err == nil && spooled:
		a.s.w.rec.observe(errResultSpooled)
	case err == nil || errors.Is(err, storage.ErrExists):
		a.s.w.rec.observe(nil)
	default:
		a.s.w.rec.observe(err)
	}
	switch {
	case errors.Is(err, storage.ErrExists):
		a.log.Info().Msg("the dead letter's result is recorded already")
	case err != nil:
		a.s.w.metrics.storageError(StorageOpDeliver)
		a.log.Error().Err(err).Msg("the dead letter's result not stored: queries will not count the job (the dead letter stands)")
	default:
		a.s.w.metrics.recorded(r, spooled)
	}
}

// requeuedOverDeadLetter reports whether this delivery re-queued (by `dlq
// retry`) a job whose stored result at key is its dead letter's, of an
// earlier attempt: the job runs again and its result replaces that one
// (storage.Deliver), rather than being acknowledged as already recorded.
func (a *attemptState) requeuedOverDeadLetter(ctx context.Context, key string) bool {
	if a.attempt == a.deliveries {
		return false // not re-queued: no prior attempts carried over
	}
	old, err := storage.ReadResult(ctx, a.s.w.rec.store, key)
	if err != nil {
		return false
	}
	return old.DeadLettered() && old.Attempt < a.attempt
}
