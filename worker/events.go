package worker

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// eventPublisher publishes job events without waiting for each ack: a slot
// hands the event to JetStream and goes on; one goroutine checks every ack
// (in publish order) and logs the events the stream did not take. Events
// are progress, never a verdict (a verdict is the stored result), so an
// event lost is logged, not retried. Events of one job stay in order: they
// go out on one connection, in the order the slot published them.
type eventPublisher struct {
	js      jetstream.JetStream
	log     zerolog.Logger
	pending chan pendingEvent
	done    chan struct{}
}

type pendingEvent struct {
	f    jetstream.PubAckFuture
	kind string
}

func newEventPublisher(js jetstream.JetStream, log zerolog.Logger) *eventPublisher {
	p := &eventPublisher{js: js, log: log, pending: make(chan pendingEvent, 4096), done: make(chan struct{})}
	go p.checkAcks()
	return p
}

// publish sends one event; it blocks only when thousands are unacked.
func (p *eventPublisher) publish(subject string, data []byte, kind string) {
	f, err := p.js.PublishAsync(subject, data)
	if err != nil {
		p.log.Debug().Err(err).Str("kind", kind).Msg("event not published")
		return
	}
	p.pending <- pendingEvent{f: f, kind: kind}
}

func (p *eventPublisher) checkAcks() {
	defer close(p.done)
	for e := range p.pending {
		select {
		case <-e.f.Ok():
		case err := <-e.f.Err():
			p.log.Debug().Err(err).Str("kind", e.kind).Msg("event not stored")
		}
	}
}

// shutdown waits (up to timeout) for the acks of the events published so far.
// No publish may follow.
func (p *eventPublisher) shutdown(timeout time.Duration) {
	close(p.pending)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.log.Debug().Msg("events still unacknowledged at stop")
	}
}
