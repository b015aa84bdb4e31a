package runstate

import (
	"fmt"
	"sort"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// SpooledNotes says, one line per worker, where the results of a run's
// Spooled jobs are: "3 results spooled on worker w1, not in the store yet".
// With the fleet (ReadFleet; nil: unknown) each line adds what becomes of
// them: uploaded by the live worker when its store answers, or, of a
// worker that is gone, how to get them into the store. Sorted by worker.
func SpooledNotes(p Progress, fleet []protocol.WorkerStatus) []string {
	byID := map[string]protocol.WorkerStatus{}
	for _, w := range fleet {
		byID[w.ID] = w
	}
	workers := make([]string, 0, len(p.SpooledOn))
	for w := range p.SpooledOn {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	now := time.Now()
	var out []string
	for _, id := range workers {
		n := p.SpooledOn[id]
		what, them := "results", "them"
		if n == 1 {
			what, them = "result", "it"
		}
		name := id
		if name == "" {
			name = "(unknown)"
		}
		line := fmt.Sprintf("%d %s spooled on worker %s, not in the store yet", n, what, name)
		switch w, ok := byID[id]; {
		case fleet == nil:
		case ok && w.Live(now) && w.Spool != nil:
			line += fmt.Sprintf(": its spool %s on %s (%d pending) uploads %s when the store answers", w.Spool.Path, w.Host, w.Spool.Entries, them)
		case ok && w.Live(now):
			line += fmt.Sprintf(": the worker uploads %s when the store answers", them)
		default:
			line += fmt.Sprintf(": the worker is not running; start it again on the same spool, or upload %s with `benchfleet spool drain DIR` on its host", them)
		}
		out = append(out, line)
	}
	return out
}
