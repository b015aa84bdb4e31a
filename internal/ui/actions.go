package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// rightsCache holds what the dashboard's NATS user may publish
// (natsconn.ReadRights), reused for rightsTTL once known.
type rightsCache struct {
	mu sync.Mutex
	r  natsconn.Rights
	at time.Time
}

// rightsTTL is how long the NATS user's rights are reused; rights not
// learned are asked again after rightsRetry.
const (
	rightsTTL   = time.Minute
	rightsRetry = 10 * time.Second
)

// natsRights are the dashboard's NATS user's rights; unknown (every
// action offered, as before) when the server does not say.
func (s *Server) natsRights(ctx context.Context) natsconn.Rights {
	c := &s.rights
	c.mu.Lock()
	defer c.mu.Unlock()
	if age := time.Since(c.at); !c.at.IsZero() && (c.r.Known && age < rightsTTL || !c.r.Known && age < rightsRetry) {
		return c.r
	}
	if nc := s.cfg.JS.Conn(); nc != nil {
		c.r, _ = natsconn.ReadRights(ctx, nc)
	}
	c.at = time.Now()
	return c.r
}

// The users of deploy/nats/accounts.conf who may take each action.
const (
	needsCancel  = "a producer's or the admin's NATS credentials"
	needsRetry   = "a producer's NATS credentials"
	needsRelease = "the admin's NATS credentials"
)

// may reports whether the dashboard's NATS user may publish every one of
// subjects (what an action sends); when not, the reason names the action,
// the deploy/nats user it needs and the user the dashboard connects as.
func (s *Server) may(ctx context.Context, what, needs string, subjects ...string) (bool, string) {
	r := s.natsRights(ctx)
	for _, subj := range subjects {
		if !r.MayPublish(subj) {
			return false, fmt.Sprintf("%s needs %s (deploy/nats); this dashboard connects as NATS user %s, which may not", what, needs, r.User)
		}
	}
	return true, ""
}

// mayCancel: the run's cancel flag.
func (s *Server) mayCancel(ctx context.Context, run string) (bool, string) {
	return s.may(ctx, "cancelling a run", needsCancel, "$KV."+protocol.BucketRuns+"."+protocol.CancelKey(run))
}

// mayRelease: the board's bench-health record.
func (s *Server) mayRelease(ctx context.Context, worker, dev string) (bool, string) {
	return s.may(ctx, "releasing a board", needsRelease, "$KV."+protocol.BucketHealth+"."+protocol.HealthKey(worker, dev))
}

// mayRetry: a dead letter's job back on its queue, the letter removed.
// An invalid job is never offered: it would fail the same way.
func (s *Server) mayRetry(ctx context.Context, e fleet.DeadEntry) (bool, string) {
	if why := e.NotRetryable(); why != "" {
		return false, why
	}
	q := protocol.QueueOf(e.Run, e.Pool, e.Priority)
	if e.Trust.Untrusted() {
		q.Trust = protocol.TrustUntrusted
	}
	return s.may(ctx, "re-queuing a dead letter", needsRetry, q.Subject(), "$JS.API.STREAM.MSG.DELETE."+protocol.StreamDead)
}
