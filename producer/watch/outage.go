package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// ErrUnreachable is matched (errors.Is) by the error of a wait that ran
// out of time while the store or NATS did not answer (*OutageError): the
// outage kept it from following the run to its end, not a job (the
// command line exits 69).
var ErrUnreachable = errors.New("unreachable")

// Outage is what a waiter cannot reach now. The zero Outage is none.
type Outage struct {
	// Store says why the result store is taken for unreachable ("" while
	// it answers), StoreSince since when.
	Store      string
	StoreSince time.Time
	// NATS says why NATS (its connection, or JetStream) is taken for
	// unreachable ("" while it answers), NATSSince since when.
	NATS      string
	NATSSince time.Time
	// Back names what answers again since the last Outage was told
	// ("the store", "NATS"), if anything.
	Back []string
}

// Down reports whether the store or NATS is unreachable.
func (o Outage) Down() bool { return o.Store != "" || o.NATS != "" }

// String says the outage in one line, e.g. "the store has not answered
// since 2026-12-01T10:00:00Z (storage: unavailable ...); still waiting,
// up to the timeout" or "the store answers again".
func (o Outage) String() string {
	var parts []string
	if len(o.Back) > 0 {
		verb := " answers again"
		if len(o.Back) > 1 {
			verb = " answer again"
		}
		parts = append(parts, strings.Join(o.Back, " and ")+verb)
	}
	if o.Store != "" {
		parts = append(parts, fmt.Sprintf("the store has not answered since %s (%s)", o.StoreSince.Format(time.RFC3339), o.Store))
	}
	if o.NATS != "" {
		parts = append(parts, fmt.Sprintf("NATS has not answered since %s (%s)", o.NATSSince.Format(time.RFC3339), o.NATS))
	}
	if o.Down() {
		parts = append(parts, "still waiting, up to the timeout")
	}
	return strings.Join(parts, "; ")
}

// OutageError is the error of a wait whose deadline passed during an
// outage. It Is ErrUnreachable.
type OutageError struct {
	Run    string
	Outage Outage
}

func (e *OutageError) Error() string {
	o := e.Outage
	o.Back = nil
	return fmt.Sprintf("the wait for run %s ran out of time during an outage: %s", e.Run,
		strings.TrimSuffix(o.String(), "; still waiting, up to the timeout")+"; the run goes on")
}

// Is reports whether target is ErrUnreachable.
func (e *OutageError) Is(target error) bool { return target == ErrUnreachable }

// outageTracker keeps a waiter's Outage and tells on when the store or
// NATS stops or starts answering (not when only the error's text
// changes).
type outageTracker struct {
	on  func(Outage)
	cur Outage
}

// store records a store call's error (nil: it answered); a failure that
// is not an outage (storageOutage) counts as an answer, one made after
// ctx ended as nothing.
func (t *outageTracker) store(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	why := ""
	if storageOutage(ctx, err) {
		why = err.Error()
	}
	t.set(&t.cur.Store, &t.cur.StoreSince, "the store", why)
}

// nats records why NATS is taken for unreachable ("" when it answered);
// a finding made after ctx ended is none.
func (t *outageTracker) nats(ctx context.Context, why string) {
	if ctx.Err() == nil {
		t.set(&t.cur.NATS, &t.cur.NATSSince, "NATS", why)
	}
}

func (t *outageTracker) set(field *string, since *time.Time, name, why string) {
	was := *field != ""
	*field = why
	switch {
	case why != "" && !was:
		*since = time.Now().UTC()
	case why == "" && was:
		*since = time.Time{}
		t.cur.Back = append(t.cur.Back, name)
	}
	if (why != "") == was {
		return
	}
	if t.on != nil {
		t.on(t.cur)
	}
	t.cur.Back = nil
}

// timedOut is the error of a wait whose ctx ended: an *OutageError when
// its deadline passed during an outage, else ctx's error.
func (t *outageTracker) timedOut(ctx context.Context, run string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && t.cur.Down() {
		return &OutageError{Run: run, Outage: t.cur}
	}
	return ctx.Err()
}

// storageOutage reports whether err of a store call made under ctx says
// the store did not answer (storage.ErrUnavailable, or the call's own
// deadline), not that it refused or that ctx ended.
func storageOutage(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	return errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// natsOutage reports whether err of a JetStream call made under ctx says
// NATS or JetStream did not answer (no connection, no leader, the call's
// own deadline), not that it refused or that ctx ended.
func natsOutage(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	return topology.Unavailable(ctx, err) || errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrNoServers)
}

// JudgeRunWaiting is gate.JudgeRun from the store that rides out its outage, for
// `results gate`: while the store does not answer (a look for the run's
// manifest within CallTimeout, or a judging that fails because the store
// does not answer) it tells onOutage (if not nil) once when the store
// stops answering and again when it answers, and tries again every
// DefaultResultPoll. When ctx's deadline passes during the outage, the
// error is an *OutageError (it Is ErrUnreachable).
func JudgeRunWaiting(ctx context.Context, req gate.RunInput, onOutage func(Outage)) (*gate.RunVerdict, error) {
	out := &outageTracker{on: onOutage}
	t := time.NewTicker(DefaultResultPoll)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, fleet.CallTimeout)
		_, err := req.Store.Exists(cctx, storage.ManifestKey(req.Run))
		cancel()
		if !storageOutage(ctx, err) && ctx.Err() == nil {
			out.store(ctx, nil)
			var v *gate.RunVerdict
			if v, err = gate.JudgeRun(ctx, req); !storageOutage(ctx, err) {
				if ctx.Err() != nil {
					return nil, out.timedOut(ctx, req.Run)
				}
				return v, err
			}
		}
		out.store(ctx, err)
		select {
		case <-ctx.Done():
			return nil, out.timedOut(ctx, req.Run)
		case <-t.C:
		}
	}
}
