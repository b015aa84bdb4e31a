package worker

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
)

// cancelWatch follows the cancel flags of bench-runs and stops the running
// jobs of a cancelled run.
type cancelWatch struct {
	mu        sync.Mutex
	cancelled map[string]bool
	running   map[string]map[*jobCancel]struct{}
}

type jobCancel struct{ cancel context.CancelCauseFunc }

// errRunCancelled is the cause given to a job's ctx when its run is cancelled.
var errRunCancelled = fmt.Errorf("run cancelled")

// watchCancels starts following the cancel flags until ctx ends, its
// goroutine counted in wg, and returns once the flags set so far are read.
func watchCancels(ctx context.Context, kv jetstream.KeyValue, log zerolog.Logger, wg *sync.WaitGroup) (*cancelWatch, error) {
	cw := &cancelWatch{cancelled: map[string]bool{}, running: map[string]map[*jobCancel]struct{}{}}
	watcher, err := kv.WatchFiltered(ctx, protocol.CancelKeyFilters(), jetstream.IncludeHistory())
	if err != nil {
		return nil, fmt.Errorf("watch cancel flags: %w", err)
	}
	ready := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer watcher.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-watcher.Updates():
				if !ok {
					return
				}
				if e == nil { // initial values replayed
					select {
					case <-ready:
					default:
						close(ready)
					}
					continue
				}
				if e.Operation() != jetstream.KeyValuePut {
					continue
				}
				run, what, ok := protocol.ParseRunKey(e.Key())
				if !ok || what != "cancel" {
					continue
				}
				log.Info().Str("run", run).Msg("run cancelled")
				cw.cancel(run)
			}
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return cw, nil
}

func (cw *cancelWatch) cancel(run string) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.cancelled[run] = true
	for jc := range cw.running[run] {
		jc.cancel(errRunCancelled)
	}
}

// isCancelled reports whether run has been cancelled.
func (cw *cancelWatch) isCancelled(run string) bool {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.cancelled[run]
}

// register ties cancel to run until the returned func is called. If the run
// is already cancelled, cancel is called at once.
func (cw *cancelWatch) register(run string, cancel context.CancelCauseFunc) (unregister func()) {
	jc := &jobCancel{cancel: cancel}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if cw.cancelled[run] {
		cancel(errRunCancelled)
	}
	if cw.running[run] == nil {
		cw.running[run] = map[*jobCancel]struct{}{}
	}
	cw.running[run][jc] = struct{}{}
	return func() {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		delete(cw.running[run], jc)
		if len(cw.running[run]) == 0 {
			delete(cw.running, run)
		}
	}
}
