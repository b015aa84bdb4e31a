package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/metrics"
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
		a.s.w.metrics.StorageError(metrics.StorageOpDeliver)
		a.log.Error().Err(err).Msg("the dead letter's result not stored: queries will not count the job (the dead letter stands)")
	default:
		a.s.w.metrics.Recorded(r, spooled)
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

// errCodeMsgTooBig is JetStream's "message size exceeds maximum allowed".
const errCodeMsgTooBig jetstream.ErrorCode = 10054

// tooBig reports whether a publish failed because of the message's size,
// which retrying does not heal.
func tooBig(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) || (errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeMsgTooBig)
}

// deadLetter publishes a dead letter for the job; a nil error means it is
// stored.
func (a *attemptState) deadLetter(ctx context.Context, reason string) error {
	pool := ""
	if a.job != nil {
		pool = a.job.Pool
	}
	return a.deadLetterPool(ctx, pool, reason)
}

// deadLetterPool publishes the dead letter. A payload over the job size
// limit is not embedded whole (it could not fit a message): the dead letter
// keeps its first protocol.DeadPayloadPrefix bytes, and the reason its size
// and sha256. If the publish still fails for a big payload, it is retried
// once with only the prefix.
func (a *attemptState) deadLetterPool(ctx context.Context, pool, reason string) error {
	payload := a.raw
	if len(payload) > protocol.MaxJobBytes {
		sum := sha256.Sum256(payload)
		reason = fmt.Sprintf("%s (payload of %d bytes not kept whole: the first %d bytes are, sha256 %s)",
			reason, len(payload), protocol.DeadPayloadPrefix, hex.EncodeToString(sum[:]))
		payload = payload[:protocol.DeadPayloadPrefix]
	}
	dl := protocol.DeadLetter{
		Schema: protocol.SchemaDead, Pool: pool, Reason: truncate(reason, protocol.MaxDeadReason), Attempts: a.attempt,
		Time: time.Now().UTC(), Worker: a.s.w.cfg.ID, Payload: payload, Trust: claimedTrust(a.msg),
	}
	if meta, err := a.msg.Metadata(); err == nil {
		dl.ID = fmt.Sprintf("seq-%d", meta.Sequence.Stream)
	}
	if _, prio, err := protocol.ParseJobSubject(a.msg.Subject()); err == nil && prio.Valid() {
		dl.Priority = prio
	}
	if a.job != nil && protocol.ValidID("id", a.job.ID) == nil {
		dl.ID = a.job.ID
		if protocol.ValidID("run", a.job.Run) == nil {
			dl.Run = a.job.Run
		}
	}
	publish := func() error {
		data, err := json.Marshal(dl)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		m := nats.NewMsg(protocol.DeadSubject(pool))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dead-%s-%d", dl.ID, a.attempt))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = a.s.w.js.PublishMsg(pctx, m)
		return err
	}
	err := publish()
	if err != nil && len(dl.Payload) > protocol.DeadPayloadPrefix {
		a.log.Warn().Err(err).Msg("dead letter not published; retrying with the payload's first bytes only")
		sum := sha256.Sum256(a.raw)
		dl.Reason = truncate(fmt.Sprintf("%s (payload of %d bytes not kept whole: the first %d bytes are, sha256 %s)",
			reason, len(a.raw), protocol.DeadPayloadPrefix, hex.EncodeToString(sum[:])), protocol.MaxDeadReason)
		dl.Payload = a.raw[:protocol.DeadPayloadPrefix]
		err = publish()
	}
	if err != nil {
		a.log.Error().Err(err).Msg("dead letter not published")
		return fmt.Errorf("dead letter: %w", err)
	}
	a.s.w.metrics.DeadLettered(pool)
	a.s.w.notifyDead(dl, a.job)
	return nil
}
