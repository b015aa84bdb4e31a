package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// MaxInFlight bounds the publishes of one Submit whose acks have not been
// seen yet: a run of any size
// keeps at most this many messages in memory and unconfirmed on the
// server. It is well under nats.go's own default bound (4000), so an
// async publish does not stall on it.
const MaxInFlight = 1024

// pending is one publish awaiting its ack.
type pending struct {
	f    jetstream.PubAckFuture
	job  int       // index of the job published
	sent time.Time // when it was published
	seq  uint64    // publish order
	// ack or err is the answer, once ready took it from f.
	ack *jetstream.PubAck
	err error
}

// jobPublisher publishes a run's jobs with PublishMsgAsync, at most
// MaxInFlight unacknowledged at a time, and checks every ack in publish
// order. A job whose ack fails, or does not come (its stream leader died:
// nats.go gives an async publish no timeout), is re-published
// synchronously with retries while the cluster elects a new leader; the
// message id (the job id) keeps that idempotent.
//
// The submitter publishes no per-job "queued" events: a job in the run's
// manifest that has no event yet is queued (Progress counts it so), and the
// manifest header, created after every job's ack, is the run's record of
// having been queued. Per-job events would double the messages the server
// stores for a submit.
type jobPublisher struct {
	p       *Submitter
	jobs    []*protocol.Job
	created time.Time

	ring       [MaxInFlight]pending
	head, n    int
	seq        uint64
	lastAck    time.Time
	stallUntil uint64 // publishes with seq below it are checked without waiting (a stall was seen)
	timer      *time.Timer

	published int // jobs stored by this Submit (not duplicates of an earlier one)
	acked     int // jobs confirmed so far
}

func (w *jobPublisher) run(ctx context.Context) error {
	w.lastAck = time.Now()
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	defer w.timer.Stop()
	for i, j := range w.jobs {
		if w.n == MaxInFlight {
			// Full: wait for the oldest, then take in
			// whatever has been answered meanwhile, so the loop goes on
			// in bursts rather than waking for every single ack.
			for w.n == MaxInFlight {
				if err := w.settle(ctx); err != nil {
					return err
				}
			}
			for w.n > 0 && w.ready() {
				if err := w.settle(ctx); err != nil {
					return err
				}
			}
		}
		data, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("encode job %s: %w", j.ID, err)
		}
		m := &nats.Msg{Subject: protocol.QueueOf(j.Run, j.Pool, j.Priority).Subject(), Data: data, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, j.ID)
		f, err := w.p.JS.PublishMsgAsync(m)
		if err != nil {
			// Not even sent (disconnected, or nats.go's own bound is
			// full because the connection is shared): publish this one
			// synchronously, with retries.
			if err := w.republish(ctx, i, m, err); err != nil {
				return err
			}
			continue
		}
		w.push(pending{f: f, job: i, sent: time.Now()})
	}
	for w.n > 0 {
		if err := w.settle(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (w *jobPublisher) push(e pending) {
	if w.n == MaxInFlight {
		panic("producer: publish window overrun")
	}
	e.seq = w.seq
	w.seq++
	w.ring[(w.head+w.n)%MaxInFlight] = e
	w.n++
}

// ready reports whether the oldest publish has its answer (and keeps it
// for settle).
func (w *jobPublisher) ready() bool {
	f := w.ring[w.head].f
	select {
	case ack := <-f.Ok():
		w.ring[w.head].ack = ack
		w.lastAck = time.Now()
		return true
	case err := <-f.Err():
		w.ring[w.head].err = err
		return true
	default:
		return false
	}
}

// settle waits for the oldest publish's ack and acts on it.
func (w *jobPublisher) settle(ctx context.Context) error {
	e := w.ring[w.head]
	w.ring[w.head] = pending{}
	w.head = (w.head + 1) % MaxInFlight
	w.n--
	ack, err := w.wait(ctx, e)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("publish job %s: %w", w.jobs[e.job].ID, ctx.Err())
	}
	if err != nil {
		return w.republish(ctx, e.job, e.f.Msg(), err)
	}
	if ack.Duplicate {
		if err := w.p.checkDuplicate(ctx, w.jobs[e.job], e.f.Msg().Data, ack); err != nil {
			return err
		}
	} else {
		w.published++
	}
	w.accepted()
	return nil
}

// wait returns e's ack. It gives up with errNoAck once no ack has come for
// ackStall (from the later of the last ack and e's publish); every publish
// made before that moment is then only checked, not waited for: their
// acks were lost with the same leader.
func (w *jobPublisher) wait(ctx context.Context, e pending) (*jetstream.PubAck, error) {
	if e.ack != nil || e.err != nil {
		return e.ack, e.err
	}
	select {
	case ack := <-e.f.Ok():
		w.lastAck = time.Now()
		return ack, nil
	case err := <-e.f.Err():
		return nil, err
	default:
	}
	if e.seq < w.stallUntil {
		return nil, errNoAck
	}
	w.timer.Reset(time.Until(later(w.lastAck, e.sent).Add(ackStall)))
	defer w.timer.Stop()
	select {
	case ack := <-e.f.Ok():
		w.lastAck = time.Now()
		return ack, nil
	case err := <-e.f.Err():
		return nil, err
	case <-w.timer.C:
		w.stallUntil = w.seq
		return nil, errNoAck
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// republish publishes job i's message synchronously, retrying for up to
// republishFor. A duplicate ack means an earlier publish of this Submit
// landed, so it counts as published.
func (w *jobPublisher) republish(ctx context.Context, i int, m *nats.Msg, cause error) error {
	ack, err := w.p.republish(ctx, m)
	if err != nil {
		return fmt.Errorf("publish job %s: %w (retry: %v)", w.jobs[i].ID, cause, err)
	}
	if ack.Duplicate {
		if err := w.p.checkDuplicate(ctx, w.jobs[i], m.Data, ack); err != nil {
			return err
		}
	}
	w.lastAck = time.Now()
	w.published++
	w.accepted()
	return nil
}

// accepted records that one more job is durably in the stream.
func (w *jobPublisher) accepted() {
	w.acked++
	if w.p.Progress != nil {
		w.p.Progress("published", w.acked, len(w.jobs))
	}
}

var errNoAck = errors.New("no publish ack")
