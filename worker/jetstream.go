package worker

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// What the worker asks JetStream for, each followed by jetStreamGate.
const (
	// jsFetch: a slot's fetch of its next job.
	jsFetch = "fetch"
	// jsStatus: the worker's heartbeat in bench-workers, written at least
	// every statusEvery whatever the slots do.
	jsStatus = "status"
)

// jetStreamGate is the worker's view of whether JetStream answers it: a
// connection can be up while the cluster has lost its quorum, and then
// every fetch finds no responders and no heartbeat is stored. Each kind of
// call (jsFetch, jsStatus) reports how it went; JetStream is down while
// the last call of any kind failed, since the first such failure.
// /healthz is not ok and benchfleet_jetstream_available reads 0 while it
// is down.
type jetStreamGate struct {
	log  zerolog.Logger
	kick func() // the worker's status changed

	mu    sync.Mutex
	errs  map[string]error // by kind of call: its last failure, nil once one succeeds
	since time.Time        // when JetStream stopped answering (zero while it answers)
}

func newJetStreamGate(log zerolog.Logger, kick func()) *jetStreamGate {
	return &jetStreamGate{log: log, kick: kick, errs: map[string]error{}}
}

// observe records how a call of kind went: err nil when JetStream
// answered. The worker's own stop (a cancelled fetch) is not observed.
func (g *jetStreamGate) observe(kind string, err error) {
	g.mu.Lock()
	wasDown := g.downLocked() != nil
	if err == nil {
		delete(g.errs, kind)
	} else {
		g.errs[kind] = err
	}
	down := g.downLocked()
	switch {
	case down != nil && !wasDown:
		g.since = time.Now().UTC()
	case down == nil:
		g.since = time.Time{}
	}
	g.mu.Unlock()
	switch {
	case down != nil && !wasDown:
		g.log.Error().Err(down).Msg("JetStream is not answering (a lost quorum, or a leader election): no job is claimed or heartbeat stored until it does")
		g.kick()
	case down == nil && wasDown:
		g.log.Info().Msg("JetStream is answering again")
		g.kick()
	}
}

// downLocked joins the failures of the kinds whose last call failed (nil
// when none); g.mu held.
func (g *jetStreamGate) downLocked() error {
	var errs []error
	for _, kind := range []string{jsFetch, jsStatus} {
		if err := g.errs[kind]; err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", kind, err))
		}
	}
	return errors.Join(errs...)
}

// down says why JetStream is taken for down ("" while it answers).
func (g *jetStreamGate) down() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.downLocked()
	if err == nil {
		return ""
	}
	return fmt.Sprintf("jetstream: not answering since %s (%s)", g.since.Format(time.RFC3339), strings.ReplaceAll(err.Error(), "\n", "; "))
}
