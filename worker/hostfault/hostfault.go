// Package hostfault is a job's host-fault record in the bench-health
// bucket (protocol.JobHostFaults) and the rules over it. A job that says
// its host cannot run the harness (a *device.HostError it did not bring
// about by the worker's own finding) is recorded, with that host, in the
// job's record, which every worker reads when the job is delivered again:
//
//   - a host named there never runs the job again: it hands it back
//     (after PassDelay) for another host;
//   - the deliveries the record accounts for (a fault or a pass each) do
//     not count against MaxDeliver, whichever worker counts;
//   - the job fails on every host (a dead letter) only when two distinct
//     hosts said so unconfirmed, or every host serving its pool and
//     harness did (EveryHost);
//   - a host whose different jobs keep saying it (MaxStreak in a row:
//     Streaks) with no health probe to confirm or deny it leaves service
//     for that harness, with the reason in fleet status.
//
// The worker decides each delivery by these rules; this package reads and
// writes the record (Get, Update, Delete) and the hosts serving a pool
// (ServingHosts).
package hostfault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// MaxStreak is K: how many different jobs in a row may say this host
// cannot run a harness, with no health probe configured to confirm or
// deny it and the board check passing, before the host leaves service for
// that harness (until the worker restarts). A job of that harness that
// runs here to any end of its own (passed, failed, invalid, crashed)
// starts the count again.
const MaxStreak = 3

// MaxUnrecorded is the fallback of a host fault whose record could not be
// stored (bench-health did not answer): as before records, the job is
// dead-lettered on its MaxUnrecorded-th such delivery.
const MaxUnrecorded = 2

// callTimeout bounds each bench-health and bench-workers call of the
// host-fault record.
const callTimeout = 5 * time.Second

// PassDelay is how long a host the job faulted on leaves it to others
// when it is delivered there again: 1s, doubling per earlier pass, at most
// 16s.
func PassDelay(passes int) time.Duration {
	return time.Second << min(max(passes, 0), 4)
}

// Streaks counts, per runner, the different jobs in a row that said this
// host cannot run its harness unconfirmed.
type Streaks struct {
	mu   sync.Mutex
	jobs map[string][]string // runner name -> job ids, in order
}

// NewStreaks returns empty streaks.
func NewStreaks() *Streaks { return &Streaks{jobs: map[string][]string{}} }

// Fault notes job's unconfirmed host fault on runner and returns the
// streak's length.
func (h *Streaks) Fault(runner, job string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.jobs[runner], job) {
		h.jobs[runner] = append(h.jobs[runner], job)
	}
	return len(h.jobs[runner])
}

// Ran notes that a job of runner ran to an end of its own here: the
// harness can run on this host, and the streak starts again.
func (h *Streaks) Ran(runner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.jobs, runner)
}

// Get reads job's record from kv (bench-health) and its revision: nil, 0
// when it has none. An unreadable record is returned as none, with its
// revision, so that it is started again rather than never settled.
func Get(ctx context.Context, kv jetstream.KeyValue, job string) (*protocol.JobHostFaults, uint64, error) {
	gctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	e, err := kv.Get(gctx, protocol.HostFaultsKey(job))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", protocol.BucketHealth, protocol.HostFaultsKey(job), err)
	}
	var rec protocol.JobHostFaults
	if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Job != job {
		// Unreadable: start it again rather than never settling it.
		return nil, e.Revision(), nil
	}
	return &rec, e.Revision(), nil
}

// Update applies change to job's record in kv, made from fresh when it
// has none, and stores it with a compare-and-set (retried against a
// concurrent writer). It returns the stored record.
func Update(ctx context.Context, kv jetstream.KeyValue, job *protocol.Job, change func(*protocol.JobHostFaults)) (*protocol.JobHostFaults, error) {
	key := protocol.HostFaultsKey(job.ID)
	var last error
	for range 8 {
		rec, rev, err := Get(ctx, kv, job.ID)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			rec = &protocol.JobHostFaults{Schema: protocol.SchemaHostFaults, Job: job.ID, Run: job.Run, Pool: job.Pool, Runner: job.Runner}
		}
		if rec.Hosts == nil {
			rec.Hosts = map[string]protocol.HostFault{}
		}
		change(rec)
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, callTimeout)
		if rev == 0 {
			_, err = kv.Create(pctx, key, data)
		} else {
			_, err = kv.Update(pctx, key, data, rev)
		}
		cancel()
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSequence(err) {
			return nil, fmt.Errorf("%s %s: %w", protocol.BucketHealth, key, err)
		}
		last = err // another worker wrote it meanwhile: read it again
	}
	return nil, fmt.Errorf("%s %s: too many concurrent writers: %w", protocol.BucketHealth, key, last)
}

// isWrongSequence reports whether err is a KV update's revision conflict.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Delete removes job's record from kv, once the job has ended (its result
// recorded, or its dead letter).
func Delete(ctx context.Context, kv jetstream.KeyValue, job string) error {
	dctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return kv.Delete(dctx, protocol.HostFaultsKey(job))
}

// ServingHosts are the workers (by id) that serve pool with runner now:
// self when it does (selfServes: a slot of it is in service and it is not
// draining), and every other worker whose heartbeat in workers
// (bench-workers) lists such a device in service and that is not
// draining.
func ServingHosts(ctx context.Context, workers jetstream.KeyValue, self string, selfServes bool, pool, runner string) (map[string]bool, error) {
	out := map[string]bool{}
	if selfServes {
		out[self] = true
	}
	wctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	watch, err := workers.WatchAll(wctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", protocol.BucketWorkers, err)
	}
	defer watch.Stop()
	for {
		select {
		case <-wctx.Done():
			return nil, fmt.Errorf("read %s: %w", protocol.BucketWorkers, wctx.Err())
		case e, ok := <-watch.Updates():
			if !ok {
				return nil, fmt.Errorf("read %s: watch ended", protocol.BucketWorkers)
			}
			if e == nil { // every current heartbeat is read
				return out, nil
			}
			var st protocol.WorkerStatus
			if json.Unmarshal(e.Value(), &st) != nil || st.ID == self || st.Draining {
				continue
			}
			for _, d := range st.Devices {
				if d.Pool == pool && d.Runner == runner && d.State != protocol.DeviceQuarantined {
					out[st.ID] = true
				}
			}
		}
	}
}

// EveryHost returns the dead letter's reason when rec shows that the job
// (of pool, run by runner) fails on every host: two distinct hosts said,
// unconfirmed, that they cannot run its harness, or every host serving its
// pool with its runner (serving, read only when needed) said it, at least
// one of them unconfirmed. last is the last fault's reason. "" otherwise,
// also when serving fails (its error is returned) or no host serves the
// pool.
func EveryHost(ctx context.Context, rec *protocol.JobHostFaults, pool, runner, last string, serving func(context.Context) (map[string]bool, error)) (string, error) {
	unconfirmed := rec.Unconfirmed()
	switch {
	case len(unconfirmed) >= 2:
		return fmt.Sprintf("fails on every host: %d hosts (%s) said they cannot run the harness (last: %s)",
			len(unconfirmed), strings.Join(unconfirmed, ", "), last), nil
	case len(unconfirmed) == 0:
		return "", nil
	}
	hosts, err := serving(ctx)
	if err != nil {
		return "", err
	}
	if len(hosts) == 0 {
		return "", nil // no host left to judge by: the job waits for one
	}
	for id := range hosts {
		if !rec.Has(id) {
			return "", nil
		}
	}
	ids := slices.Sorted(maps.Keys(hosts))
	return fmt.Sprintf("fails on every host: every host serving pool %s with %s (%s) said it cannot run the harness (last: %s)",
		pool, runner, strings.Join(ids, ", "), last), nil
}
