package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// The home page lists the fleet's open regressions: every series' steps
// down that it has not come back from and nobody accepted
// (gate.SeriesOpen), and the accepted ones apart. They are the results of
// the last openWindow, read through the Parquet index, cut into segments
// series by series: too much for every load of a page that reloads itself
// every few seconds, so the list is kept for openTTL and made again in the
// background, one refresh at a time, while pages show the last one.

// openWindow is how far back the home page reads results for open
// regressions: a step older than that is no longer listed there (the
// series page, which reads its own window, still shows it).
const openWindow = 90 * 24 * time.Hour

// openTTL is how long a list of open regressions is shown before it is
// made again; openRefresh bounds one making; openFirstWait is how long a
// page waits for the first one (then it says it is being made).
const (
	openTTL       = time.Minute
	openRefresh   = 2 * time.Minute
	openFirstWait = 500 * time.Millisecond
)

// openList is the fleet's open and accepted regressions at a time.
type openList struct {
	Open, Accepted []gate.OpenRegression
	// At is when the results were read; Took how long making it took.
	At   time.Time
	Took time.Duration
	// Warnings name acceptance records that could not be read.
	Warnings []string
}

// openCache keeps the last openList and makes the next one.
type openCache struct {
	mu      sync.Mutex
	last    *openList
	err     error         // of the last making, when it failed
	running chan struct{} // closed when the making under way ends; nil: none
}

// openRegressions is the fleet's open regressions for a page: the list
// made less than openTTL ago; else the last one, older, while a new one is
// made in the background; else (none made yet) the first one when it is
// made within openFirstWait (and before ctx ends), else nil. pending says a making is under way; err
// is the last making's error.
func (s *Server) openRegressions(ctx context.Context, now time.Time) (list *openList, pending bool, err error) {
	c := &s.opens
	c.mu.Lock()
	if c.last != nil && now.Sub(c.last.At) < openTTL {
		defer c.mu.Unlock()
		return c.last, false, nil
	}
	if c.running == nil {
		done := make(chan struct{})
		c.running = done
		go func() {
			defer close(done)
			rctx, cancel := context.WithTimeout(context.Background(), openRefresh)
			defer cancel()
			l, err := fleetOpen(rctx, s.cfg.Store, s.cfg.Gate, time.Now())
			c.mu.Lock()
			defer c.mu.Unlock()
			c.running, c.err = nil, err
			if err == nil {
				c.last = l
			}
		}()
	}
	if c.last != nil { // the last one while the next is made
		defer c.mu.Unlock()
		return c.last, true, c.err
	}
	running := c.running
	c.mu.Unlock()
	wait := time.NewTimer(openFirstWait)
	defer wait.Stop()
	select {
	case <-running:
	case <-wait.C:
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, c.running != nil, c.err
}

// fleetOpen makes the list of open regressions of every series with
// results in the openWindow before now, judged by cfg (defaults filled).
func fleetOpen(ctx context.Context, store storage.Bucket, cfg gate.GateConfig, now time.Time) (*openList, error) {
	start := time.Now()
	rs, _, err := index.Query(ctx, store, index.Filter{Since: now.Add(-openWindow)})
	if err != nil {
		return nil, fmt.Errorf("open regressions: %w", err)
	}
	as, warnings, err := gate.ReadAcceptances(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open regressions: %w", err)
	}
	l := &openList{At: now, Warnings: warnings}
	bySeries, order := gate.GroupSeries(rs)
	for _, ser := range order {
		_, open := gate.SeriesOpen(bySeries[ser], ser, cfg, as)
		for _, o := range open {
			if o.IsOpen() {
				l.Open = append(l.Open, o)
			} else {
				l.Accepted = append(l.Accepted, o)
			}
		}
	}
	l.Took = time.Since(start).Round(time.Millisecond)
	return l, nil
}
