package watch

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// DefaultServicePoll is how often a ServiceWatch reads the fleet.
const DefaultServicePoll = 10 * time.Second

// BoardOut is a board of a live worker that takes no job now, and why.
type BoardOut struct {
	// Worker and Device are the board's ids in bench-workers.
	Worker, Device string
	// Why is "quarantined", "quarantined (<reason>)" or
	// "out of service (<why>)".
	Why string
}

// PoolService says whether a pool of a run has a board in service: one of
// a live, not draining worker that is not quarantined.
type PoolService struct {
	Pool string
	// InService: some board of the pool takes jobs.
	InService bool
	// Out are the pool's boards that take none, sorted by worker and
	// device; empty when InService or when no live worker has a board of
	// the pool.
	Out []BoardOut
}

// String says it in one line, e.g. "pool n150: no board in service:
// tt-host/tt0 quarantined (reset failed), tt-host/tt1 out of service
// (worker draining)".
func (s PoolService) String() string {
	switch {
	case s.InService:
		return fmt.Sprintf("pool %s: a board is in service again", s.Pool)
	case len(s.Out) == 0:
		return fmt.Sprintf("pool %s: no board in service: no live worker serves it", s.Pool)
	}
	parts := make([]string, len(s.Out))
	for i, b := range s.Out {
		parts[i] = b.Worker + "/" + b.Device + " " + b.Why
	}
	return fmt.Sprintf("pool %s: no board in service: %s", s.Pool, strings.Join(parts, ", "))
}

// PoolsService returns the service of each of pools (sorted, each once)
// in fleet at now. A worker whose heartbeat is older than
// protocol.WorkerStaleAfter serves nothing, nor does a draining one or a
// quarantined board.
func PoolsService(fleet []protocol.WorkerStatus, pools []string, now time.Time) []PoolService {
	byPool := map[string]*PoolService{}
	var names []string
	for _, p := range pools {
		if byPool[p] == nil {
			byPool[p] = &PoolService{Pool: p}
			names = append(names, p)
		}
	}
	for _, w := range fleet {
		why := ""
		switch {
		case !w.Live(now):
			why = "out of service (no heartbeat since " + w.Time.UTC().Format("15:04:05Z") + ")"
		case w.Draining:
			why = "out of service (worker draining)"
		}
		for _, d := range w.Devices {
			s := byPool[d.Pool]
			if s == nil {
				continue
			}
			switch {
			case why != "":
				s.Out = append(s.Out, BoardOut{Worker: w.ID, Device: d.ID, Why: why})
			case d.State == protocol.DeviceQuarantined && d.Reason != "":
				s.Out = append(s.Out, BoardOut{Worker: w.ID, Device: d.ID, Why: "quarantined (" + d.Reason + ")"})
			case d.State == protocol.DeviceQuarantined:
				s.Out = append(s.Out, BoardOut{Worker: w.ID, Device: d.ID, Why: "quarantined"})
			default:
				s.InService = true
			}
		}
	}
	sort.Strings(names)
	out := make([]PoolService, 0, len(names))
	for _, p := range names {
		s := byPool[p]
		if s.InService {
			s.Out = nil
		}
		sort.Slice(s.Out, func(i, j int) bool {
			if s.Out[i].Worker != s.Out[j].Worker {
				return s.Out[i].Worker < s.Out[j].Worker
			}
			return s.Out[i].Device < s.Out[j].Device
		})
		out = append(out, *s)
	}
	return out
}

// RunPools returns the pools of a run's jobs, sorted, each once.
func RunPools(jobs []protocol.ManifestJob) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Pool)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ServiceWatch follows, while a run waits, whether each pool it needs has
// a board in service, and says so when that changes.
type ServiceWatch struct {
	// Workers is the bench-workers bucket. Required.
	Workers jetstream.KeyValue
	// Pools are the run's pools (RunPools).
	Pools []string
	// Interval is the time between reads of the fleet (default
	// DefaultServicePoll).
	Interval time.Duration
	// Said is what was said already (e.g. by submit, from PoolsService):
	// a pool's service equal to it is not reported again. Absent pools
	// count as in service.
	Said []PoolService
	// OnChange is called from Run's goroutine with a pool's service when
	// the pool loses its last board in service, when the boards out or
	// their reasons change meanwhile, and when a board is in service
	// again. Required.
	OnChange func(PoolService)

	last map[string]string // pool → what was said of its outage
}

// Check reads the fleet once and calls OnChange for each pool whose
// service differs from what was said. A fleet that cannot be read is
// skipped (the watch is a hint; the wait goes on). Check and Run are not
// safe for concurrent use.
func (w *ServiceWatch) Check(ctx context.Context) {
	if w.last == nil {
		w.last = map[string]string{}
		for _, s := range w.Said {
			if !s.InService {
				w.last[s.Pool] = s.String()
			}
		}
	}
	// A fleet that does not answer soon is skipped: the wait goes on.
	cctx, cancel := context.WithTimeout(ctx, fleet.CallTimeout)
	fleet, err := fleet.ReadFleet(cctx, w.Workers)
	cancel()
	if err != nil {
		return
	}
	for _, s := range PoolsService(fleet, w.Pools, time.Now()) {
		said, wasOut := w.last[s.Pool]
		switch {
		case s.InService && wasOut:
			delete(w.last, s.Pool)
			w.OnChange(s)
		case !s.InService && s.String() != said:
			w.last[s.Pool] = s.String()
			w.OnChange(s)
		}
	}
}

// Run calls Check every Interval until ctx ends (call Check first to say
// the state at once). It returns when ctx ends.
func (w *ServiceWatch) Run(ctx context.Context) {
	interval := w.Interval
	if interval <= 0 {
		interval = DefaultServicePoll
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Check(ctx)
		}
	}
}
