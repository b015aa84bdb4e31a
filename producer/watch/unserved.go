package watch

import (
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// UnservedWarnings says, one sentence per pool, which of the run's pools
// no board in service serves at now (no live worker has one, or all its
// boards are quarantined or their workers draining, each named with why):
// their jobs stay queued until one is. It also returns the pools' service
// it computed from fleet (PoolsService), for a waiter to follow.
func UnservedWarnings(fleet []protocol.WorkerStatus, m *protocol.RunManifest, now time.Time) ([]string, []PoolService) {
	svc := PoolsService(fleet, RunPools(m.Jobs), now)
	var warnings []string
	for _, s := range svc {
		if s.InService {
			continue
		}
		n := 0
		for _, j := range m.Jobs {
			if j.Pool == s.Pool {
				n++
			}
		}
		jobs, verb := runstate.Count(n, "job"), runstate.Plural(n, "stays", "stay")
		w := fmt.Sprintf("no live worker serves pool %s: its %s %s queued until one starts (see benchfleet fleet status)", s.Pool, jobs, verb)
		if len(s.Out) > 0 {
			w = fmt.Sprintf("%s; its %s %s queued until one is back (see benchfleet fleet status)", s, jobs, verb)
		}
		warnings = append(warnings, w)
	}
	return warnings, svc
}
