package file

import (
	"fmt"
	"sync"
)

// groupSync is a group commit: many writers wait for one flush of the
// file system that holds their files. A writer calls wait after its
// writes; wait returns once a flush that started after the call has
// completed, so every write made before the call is durable. Writers that
// arrive while a flush is running share the next one: with N slots
// delivering at once the store pays one flush for many results, not N×4
// fsyncs.
type groupSync struct {
	flush func() error

	mu      sync.Mutex
	cond    *sync.Cond
	started uint64 // flushes started
	done    uint64 // flushes completed (in order)
	running bool
	errGen  uint64 // the last flush that failed (0: none)
	err     error
}

func newGroupSync(flush func() error) *groupSync {
	g := &groupSync{flush: flush}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait returns when a flush started after this call has completed, with
// its error (or a later failed flush's: a failure is never hidden).
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A flush running now may have started before this writer's writes:
	// only the next one counts.
	target := g.started + 1
	for g.done < target {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := g.flush()
		g.mu.Lock()
		g.running = false
		g.done = gen
		if err != nil {
			g.errGen, g.err = gen, err
		}
		g.cond.Broadcast()
	}
	if g.errGen >= target {
		return fmt.Errorf("storage: sync: %w", g.err)
	}
	return nil
}
