package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// fleetCallTimeout bounds one read of the whole fleet (ReadFleet).
const fleetCallTimeout = 10 * time.Second

// ReadFleet returns the workers' statuses in the bench-workers bucket,
// sorted by id: the live ones, and those whose heartbeat lapsed (killed,
// hung or cut off) marked Lost, with the devices and jobs of their last
// heartbeat, until the bucket's TTL removes them. A worker that stopped
// cleanly has removed its record. Each read has 10 s and is tried again
// while JetStream does not answer (a leader election, a lost quorum),
// until ctx's deadline or, without one, topology.DefaultTimeout (30 s):
// then the error Is topology.ErrUnavailable (the command line's exit 69).
func ReadFleet(ctx context.Context, workers jetstream.KeyValue) ([]protocol.WorkerStatus, error) {
	var out []protocol.WorkerStatus
	err := topology.Retry(ctx, topology.Config{CallTimeout: fleetCallTimeout}, "bucket "+protocol.BucketWorkers, func(ctx context.Context) (err error) {
		out, err = readFleet(ctx, workers)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	return out, nil
}

// readFleet is one read of ReadFleet.
func readFleet(ctx context.Context, workers jetstream.KeyValue) ([]protocol.WorkerStatus, error) {
	lister, err := workers.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	defer lister.Stop()
	out := []protocol.WorkerStatus{}
	for k := range lister.Keys() {
		e, err := workers.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", k, err)
		}
		var st protocol.WorkerStatus
		if json.Unmarshal(e.Value(), &st) == nil {
			st.Lost = !st.Live(time.Now())
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// UnservedPools returns the pools of jobs (sorted, each once) that no live
// worker of fleet serves with a usable device: jobs for them wait in the
// queue until such a worker starts. A draining or lost worker and a
// quarantined device serve nothing.
func UnservedPools(fleet []protocol.WorkerStatus, jobs []protocol.ManifestJob) []string {
	served := map[string]bool{}
	for _, w := range fleet {
		if w.Draining || !w.Live(time.Now()) {
			continue
		}
		for _, d := range w.Devices {
			if d.State != protocol.DeviceQuarantined {
				served[d.Pool] = true
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, j := range jobs {
		if !served[j.Pool] && !seen[j.Pool] {
			seen[j.Pool] = true
			out = append(out, j.Pool)
		}
	}
	sort.Strings(out)
	return out
}

// ErrWorkerIDLive is matched (errors.Is) by the error of CheckWorkerID
// when another live worker has the id.
var ErrWorkerIDLive = errors.New("worker id in use")

// WorkerIDLiveError names the live worker that holds an id.
type WorkerIDLiveError struct {
	// Status is the live worker's heartbeat; Age its age when checked.
	Status protocol.WorkerStatus
	Age    time.Duration
}

func (e *WorkerIDLiveError) Error() string {
	where := "on host " + e.Status.Host
	if e.Status.PID != 0 {
		where += fmt.Sprintf(" (pid %d)", e.Status.PID)
	}
	if e.Status.Spool != nil {
		where += ", spool " + e.Status.Spool.Path
	}
	return fmt.Sprintf("worker id %s is in use: a live worker %s heartbeated %s ago; give this worker another --id, or stop that one first "+
		"(a worker that is gone stops counting %s after its last heartbeat)",
		e.Status.ID, where, e.Age.Round(time.Second), protocol.WorkerStaleAfter)
}

// Is makes the error match ErrWorkerIDLive.
func (e *WorkerIDLiveError) Is(target error) bool { return target == ErrWorkerIDLive }

// CheckWorkerID reads worker id's record in bench-workers before a worker
// with that id starts on host as process pid. It returns a
// *WorkerIDLiveError when the record is another live worker's: fresh
// (protocol.WorkerStatus.Live) and not the record of a dead predecessor on
// this host (same host, a pid that alive says is gone). Two live workers
// with one id overwrite each other's heartbeat, so the fleet shows one of
// them with the wrong boards. It also returns the record (nil when there is
// none), so the caller can look at the spool it names. alive nil: every pid
// counts as alive.
func CheckWorkerID(ctx context.Context, workers jetstream.KeyValue, id, host string, pid int, alive func(pid int) bool) (*protocol.WorkerStatus, error) {
	e, err := workers.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("worker id %s: %w", id, err)
	}
	var st protocol.WorkerStatus
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, nil // not a heartbeat of ours: nothing to go by
	}
	now := time.Now()
	if !st.Live(now) {
		return &st, nil
	}
	if st.Host == host && st.PID != 0 && st.PID != pid && alive != nil && !alive(st.PID) {
		return &st, nil // this host's earlier worker, killed before it could remove its record
	}
	return &st, &WorkerIDLiveError{Status: st, Age: max(0, now.Sub(st.Time))}
}
