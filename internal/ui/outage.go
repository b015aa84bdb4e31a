package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	workers "github.com/benchfleet/benchfleet/worker/fleet"
)

// PageBudget bounds the NATS and store calls of one page: what they have
// not read by then is left out, and the page renders what it has under a
// banner for each outage, within about this long.
const PageBudget = 1500 * time.Millisecond

// probeTimeout bounds each reachability check (probeNATS, probeStore).
const probeTimeout = 700 * time.Millisecond

// probeInterval is how often Serve checks NATS and the store between
// requests, so an outage's "since" is when it began, not when someone
// looked.
const probeInterval = 2 * time.Second

// outages says since when the dashboard could not reach NATS and the
// store (zero: reachable), and why.
type outages struct {
	mu          sync.Mutex
	nats, store outageState
}

type outageState struct {
	since time.Time
	err   error
}

// note records a check's outcome: a failure starts an outage (or goes on
// with it), a success ends it.
func (s *outageState) note(err error, now time.Time) {
	switch {
	case err == nil:
		*s = outageState{}
	case s.since.IsZero():
		*s = outageState{since: now, err: err}
	default:
		s.err = err
	}
}

// health is what one page knows of its sources: which answered its checks
// and the banners to show.
type health struct {
	NATS, Store bool
	// natsSince and storeSince are the outages' starts (zero: none).
	natsSince, storeSince time.Time
	natsErr, storeErr     error
}

// banner is one outage as every page shows it, above its content.
type banner struct {
	// Kind is "nats" or "store" (the element's id: outage-nats,
	// outage-store).
	Kind string
	// Title says what is down and since when; Text what it means and what
	// the page shows meanwhile.
	Title, Text string
}

type healthKey struct{}

// probe checks NATS (the connection, then the list of streams and the
// info of the bench-runs stream, which only the cluster's leaders answer:
// none while it has lost its quorum) and the store (an
// existence query), at once and each within probeTimeout, records what it
// found for the outage banners and returns it. It is the first thing a
// page does; a page skips the reads of a source that did not answer.
func (s *Server) probe(ctx context.Context) health {
	var nerr, serr error
	var wg sync.WaitGroup
	wg.Go(func() { nerr = s.probeNATS(ctx) })
	wg.Go(func() { serr = s.probeStore(ctx) })
	wg.Wait()
	now := time.Now()
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	if ctx.Err() == nil || nerr == nil {
		s.out.nats.note(nerr, now)
	}
	if ctx.Err() == nil || serr == nil {
		s.out.store.note(serr, now)
	}
	return health{NATS: nerr == nil, Store: serr == nil, natsSince: s.out.nats.since, storeSince: s.out.store.since,
		natsErr: s.out.nats.err, storeErr: s.out.store.err}
}

// probeNATS says why NATS cannot be read now, nil when it can.
func (s *Server) probeNATS(ctx context.Context) error {
	if nc := s.cfg.JS.Conn(); nc != nil && nc.Status() != nats.CONNECTED {
		return fmt.Errorf("the connection is %s", strings.ToLower(nc.Status().String()))
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// The list of streams needs the cluster's meta leader, a stream's info
	// its leader: while a cluster lacks its quorum there is neither (the
	// account's info is answered anyway).
	var merr, serr error
	var wg sync.WaitGroup
	wg.Go(func() {
		names := s.cfg.JS.StreamNames(ctx)
		for range names.Name() {
		}
		merr = names.Err()
	})
	wg.Go(func() { _, serr = s.cfg.Topology.Runs.Status(ctx) })
	wg.Wait()
	if err := errors.Join(merr, serr); err != nil {
		if noLeader(err) {
			return fmt.Errorf("connected, but JetStream did not answer in %s: the cluster has no leader (an election, or a lost quorum)", probeTimeout)
		}
		return fmt.Errorf("JetStream: %w", err)
	}
	return nil
}

// noLeader reports whether err is JetStream not answering (no leader to
// answer: an election, a lost quorum) rather than a refusal, as the
// producer's waiters take it (topology.Unavailable). The page's own
// deadline having passed is such an answer too, so no ctx is asked.
func noLeader(err error) bool {
	return topology.Unavailable(context.Background(), err)
}

// natsDown records, for a page whose probe passed, that a read of NATS then
// got no answer (a cluster losing its quorum may answer the probe and not
// the read): the page's banner and the next pages say so, as after a
// failed probe. It reports false, recording nothing, for any other error.
func (s *Server) natsDown(r *http.Request, h *health, err error) bool {
	if !noLeader(err) {
		return false
	}
	s.out.mu.Lock()
	s.out.nats.note(fmt.Errorf("connected, but JetStream did not answer a read: the cluster has no leader (an election, or a lost quorum)"), time.Now())
	h.NATS, h.natsSince, h.natsErr = false, s.out.nats.since, s.out.nats.err
	s.out.mu.Unlock()
	if ps, ok := r.Context().Value(healthKey{}).(*pageState); ok {
		ps.h = *h
	}
	return true
}

// probeStore says why the store cannot be read now, nil when it can.
func (s *Server) probeStore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := s.cfg.Store.Exists(ctx, storage.ManifestKey("benchfleet-dashboard-probe")); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer in %s", probeTimeout)
		}
		return err
	}
	return nil
}

// watchOutages probes every probeInterval until ctx ends (Serve runs it).
func (s *Server) watchOutages(ctx context.Context) {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, PageBudget)
			s.probe(pctx)
			cancel()
		}
	}
}

// pageHealth probes for the request's page (Server.probe) within a
// context bounded by PageBudget, which the page's reads use too, and
// keeps the result for its banners (render).
func (s *Server) pageHealth(r *http.Request) (context.Context, context.CancelFunc, health) {
	ctx, cancel := context.WithTimeout(r.Context(), PageBudget)
	h := s.probe(ctx)
	if ps, ok := r.Context().Value(healthKey{}).(*pageState); ok {
		ps.h, ps.probed = h, true
		ps.deadline, _ = ctx.Deadline()
	}
	return ctx, cancel, h
}

// banners are the outages of h as the page says them; fleet (nil when not
// read) says what workers hold in their spools meanwhile.
func (h health) banners(fleet []protocol.WorkerStatus, now time.Time) []banner {
	var out []banner
	if !h.NATS && !h.natsSince.IsZero() {
		out = append(out, banner{Kind: "nats", Title: "NATS is not answering " + since(h.natsSince, now),
			Text: fmt.Sprintf("%v. Workers, queues, runs and events cannot be read, and no job is claimed: workers finish the jobs they hold and keep their results (in their spools when the store is down too). What is below was read from the store alone.", h.natsErr)})
	}
	if !h.Store && !h.storeSince.IsZero() {
		text := fmt.Sprintf("%v. Verdicts and figures need the stored results: the runs below show their events' progress; artifacts cannot be served. ", h.storeErr)
		text += spoolNote(fleet, h.NATS)
		out = append(out, banner{Kind: "store", Title: "The result store is not answering " + since(h.storeSince, now), Text: text})
	}
	return out
}

// spoolNote says what the workers of fleet hold in their spools.
func spoolNote(fleet []protocol.WorkerStatus, natsOK bool) string {
	if !natsOK {
		return "What workers have spooled meanwhile is unknown: NATS, where they report it, is not answering either."
	}
	var parts []string
	total := 0
	for _, w := range fleet {
		switch {
		case w.Spool != nil && w.Spool.Entries > 0:
			total += w.Spool.Entries
			parts = append(parts, fmt.Sprintf("%s: %s in %s", w.ID, plural(w.Spool.Entries, "result"), w.Spool.Path))
		case w.Spool == nil && !w.Lost && w.Store != "":
			parts = append(parts, w.ID+": no spool, it claims nothing until the store answers")
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "No worker reports a spooled result: results wait in workers' spools and are uploaded when the store answers."
	}
	return fmt.Sprintf("Spooled on workers, uploaded when the store answers (%s in all): %s.", plural(total, "result"), strings.Join(parts, "; "))
}

// since is "since 12:00:03Z (2m ago)".
func since(t, now time.Time) string {
	return fmt.Sprintf("since %s (%s)", t.UTC().Format("2006-01-02 15:04:05Z"), ago(now, t))
}

// pageState is what a request's page learned of its sources, kept in the
// request's context for render.
type pageState struct {
	probed bool
	h      health
	// deadline ends the page's reads (PageBudget after its probe began).
	deadline time.Time
	// fleet is the fleet the page read (nil: not read).
	fleet []protocol.WorkerStatus
}

// keepFleet records the fleet a page read, for its banners.
func keepFleet(r *http.Request, fleet []protocol.WorkerStatus) {
	if ps, ok := r.Context().Value(healthKey{}).(*pageState); ok {
		ps.fleet = fleet
	}
}

// pageBanners are the outage banners of the request's page: from its
// probe, or, for a page that made none (an error page), a fresh one.
func (s *Server) pageBanners(r *http.Request) []banner {
	ps, ok := r.Context().Value(healthKey{}).(*pageState)
	if !ok {
		return nil
	}
	if !ps.probed {
		ctx, cancel := context.WithTimeout(r.Context(), PageBudget)
		defer cancel()
		ps.h, ps.probed = s.probe(ctx), true
		ps.deadline, _ = ctx.Deadline()
	}
	fleet := ps.fleet
	if !ps.h.Store && ps.h.NATS && fleet == nil && time.Until(ps.deadline) > 0 {
		// What the workers have spooled, within what is left of the page's
		// budget.
		ctx, cancel := context.WithDeadline(r.Context(), ps.deadline)
		defer cancel()
		fleet, _ = workers.ReadFleet(ctx, s.cfg.Topology.Workers)
	}
	return ps.h.banners(fleet, time.Now())
}
