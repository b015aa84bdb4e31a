package worker

import (
	"context"

	"github.com/benchfleet/benchfleet/device"
)

// sweep cleans up after a worker of this host that died with jobs running
// (this one, before a restart): every runner that can (device.Sweeper)
// kills what processes those jobs left and removes their rooms and
// cgroups. Start calls it before any slot claims, so that no leftover
// holds a board when its next job starts. What cannot be cleaned is
// logged; the slots still start (a board still held is found busy when a
// job starts, and the job goes back as the board's fault).
func (w *Worker) sweep(ctx context.Context) {
	seen := map[device.Sweeper]bool{}
	for _, s := range w.slots {
		sw, ok := s.runner.(device.Sweeper)
		if !ok || seen[sw] {
			continue
		}
		seen[sw] = true
		found, err := sw.Sweep(ctx)
		if found != "" {
			w.log.Warn().Str("runner", s.runner.Name()).Str("found", found).
				Msg("cleaned up after a worker that died with jobs running: their processes killed, their rooms and cgroups removed")
		}
		if err != nil {
			w.log.Error().Err(err).Str("runner", s.runner.Name()).Msg("not everything a dead worker's jobs left could be cleaned up")
		}
	}
}
