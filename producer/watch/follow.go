package watch

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// eventFeed is a wait's reading of its run's events: the stored ones
// first (replayed once read to the end of the stream as it was), then the
// new ones as they come (events), through a consumer made again from
// where the reading stopped when it ends. Its methods but the consumer's
// callbacks run on the waiting goroutine.
type eventFeed struct {
	w      *Watcher
	states map[string]*runstate.JobState
	events chan *protocol.Event
	// replayed: the stored events have been read to their end.
	replayed bool
	// last is the stream sequence of the last event read (0: none).
	last atomic.Uint64
	cc   jetstream.ConsumeContext

	mu    sync.Mutex
	fault error // what the consumer reported since health last looked
}

// following reports whether new events are being consumed.
func (f *eventFeed) following() bool {
	if f.cc == nil {
		return false
	}
	select {
	case <-f.cc.Closed():
		return false
	default:
		return true
	}
}

// start reads the stored events not read yet, to the stream's end (a
// reading cut short by an outage goes on from where it stopped), keeping
// remaining in step with the jobs they end or revive; then it starts
// consuming the new ones.
func (f *eventFeed) start(ctx context.Context, remaining *int) error {
	filter := []string{protocol.RunEventsFilter(f.w.Manifest.Run)}
	if !f.replayed {
		last, err := fleet.ReadStoredFrom(ctx, f.w.JS, protocol.StreamEvents, filter, f.last.Load()+1, f.w.Ephemeral, func(m jetstream.Msg) {
			e, err := protocol.DecodeEvent(m.Data())
			if err != nil || !protocol.TrustedEvent(m.Subject(), e.Kind) {
				return
			}
			if st, ok := f.states[e.Job]; ok {
				was := st.Terminal()
				runstate.ApplyEvent(st, e)
				switch now := st.Terminal(); {
				case !was && now:
					*remaining--
				case was && !now:
					*remaining++
				}
			}
		})
		if last > f.last.Load() {
			f.last.Store(last)
		}
		if err != nil {
			return err
		}
		f.replayed = true
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filter, DeliverPolicy: jetstream.DeliverAllPolicy}
	if last := f.last.Load(); last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	}
	cctx, cancel := context.WithTimeout(ctx, fleet.CallTimeout)
	cons, err := fleet.ReadConsumer(cctx, f.w.JS, protocol.StreamEvents, cfg, f.w.Ephemeral)
	cancel()
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if meta, err := m.Metadata(); err == nil {
			f.last.Store(meta.Sequence.Stream)
		}
		e, err := protocol.DecodeEvent(m.Data())
		if err != nil || !protocol.TrustedEvent(m.Subject(), e.Kind) {
			return // a worker's kind of event from a producer is forged
		}
		select {
		case f.events <- e:
		case <-ctx.Done():
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		f.mu.Lock()
		f.fault = err
		f.mu.Unlock()
	}))
	if err != nil {
		return err
	}
	f.cc = cc
	return nil
}

// health says why NATS is taken for unreachable while the feed follows
// ("" when it answers): its connection is down, or the consumer reported
// a fault (or down was said before) and JetStream does not answer a
// request within CallTimeout now.
func (f *eventFeed) health(ctx context.Context, down bool) string {
	nc := f.w.JS.Conn()
	if !nc.IsConnected() {
		return "connection " + nc.Status().String()
	}
	f.mu.Lock()
	fault := f.fault
	f.fault = nil
	f.mu.Unlock()
	if fault == nil && !down {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, fleet.CallTimeout)
	defer cancel()
	_, err := f.w.JS.AccountInfo(cctx)
	return natsWhy(ctx, err)
}

// stop ends the consuming.
func (f *eventFeed) stop() {
	if f.cc != nil {
		f.cc.Stop()
	}
}

// natsWhy is err's text when it says NATS did not answer (natsOutage),
// else "".
func natsWhy(ctx context.Context, err error) string {
	if natsOutage(ctx, err) {
		return err.Error()
	}
	return ""
}
