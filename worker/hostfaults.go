package worker

// Host faults are counted per host. A job that says its host cannot run
// the harness (a *device.HostError it did not bring about by the worker's
// own finding) is recorded, with that host, in the job's
// protocol.JobHostFaults record in bench-health, which every worker reads
// when the job is delivered again:
//
//   - a host named there never runs the job again: it hands it back
//     (passHostFault) for another host;
//   - the deliveries the record accounts for (a fault or a pass each) do
//     not count against MaxDeliver, whichever worker counts;
//   - the job fails on every host (a dead letter) only when two distinct
//     hosts said so unconfirmed, or every host serving its pool and
//     harness did;
//   - a host whose different jobs keep saying it (maxHostFaultStreak in a
//     row) with no health probe to confirm or deny it leaves service for
//     that harness, with the reason in fleet status.

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

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// maxHostFaultStreak is K: how many different jobs in a row may say this
// host cannot run a harness, with no health probe configured to confirm
// or deny it and the board check passing, before the host leaves service
// for that harness (until the worker restarts). A job of that harness
// that runs here to any end of its own (passed, failed, invalid, crashed)
// starts the count again.
const maxHostFaultStreak = 3

// maxHostFaults is the fallback of a host fault whose record could not be
// stored (bench-health did not answer): as before records, the job is
// dead-lettered on its maxHostFaults-th such delivery.
const maxHostFaults = 2

// hostFaultCallTimeout bounds each bench-health and bench-workers call of
// the host-fault record.
const hostFaultCallTimeout = 5 * time.Second

// hostPassDelay is how long a host the job faulted on leaves it to others
// when it is delivered there again: 1s, doubling per earlier pass, at most
// 16s.
func hostPassDelay(passes int) time.Duration {
	return time.Second << min(max(passes, 0), 4)
}

// hostStreaks counts, per runner, the different jobs in a row that said
// this host cannot run its harness unconfirmed.
type hostStreaks struct {
	mu   sync.Mutex
	jobs map[string][]string // runner name -> job ids, in order
}

func newHostStreaks() *hostStreaks { return &hostStreaks{jobs: map[string][]string{}} }

// fault notes job's unconfirmed host fault on runner and returns the
// streak's length.
func (h *hostStreaks) fault(runner, job string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.jobs[runner], job) {
		h.jobs[runner] = append(h.jobs[runner], job)
	}
	return len(h.jobs[runner])
}

// ran notes that a job of runner ran to an end of its own here: the
// harness can run on this host, and the streak starts again.
func (h *hostStreaks) ran(runner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.jobs, runner)
}

// loadHostFaults reads job's host-fault record: nil when it has none, or
// when bench-health does not answer (logged; the deliveries then count as
// they did before such records).
func (a *attemptState) loadHostFaults(ctx context.Context) {
	w := a.s.w
	if w.topo == nil || w.topo.Health == nil {
		return
	}
	rec, _, err := w.getHostFaults(ctx, a.job.ID)
	if err != nil {
		a.log.Warn().Err(err).Msg("host-fault record not read: the job's deliveries count as they come")
		return
	}
	a.hf = rec
}

// getHostFaults reads job's record and its revision (nil, 0 when none).
func (w *Worker) getHostFaults(ctx context.Context, job string) (*protocol.JobHostFaults, uint64, error) {
	gctx, cancel := context.WithTimeout(ctx, hostFaultCallTimeout)
	defer cancel()
	e, err := w.topo.Health.Get(gctx, protocol.HostFaultsKey(job))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("worker: %s %s: %w", protocol.BucketHealth, protocol.HostFaultsKey(job), err)
	}
	var rec protocol.JobHostFaults
	if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Job != job {
		// Unreadable: start it again rather than never settling it.
		return nil, e.Revision(), nil
	}
	return &rec, e.Revision(), nil
}

// updateHostFaults applies change to job's record, made from fresh when
// it has none, and stores it with a compare-and-set (retried against a
// concurrent writer). It returns the stored record.
func (w *Worker) updateHostFaults(ctx context.Context, job *protocol.Job, change func(*protocol.JobHostFaults)) (*protocol.JobHostFaults, error) {
	if w.topo == nil || w.topo.Health == nil {
		return nil, errors.New("worker: no bench-health bucket")
	}
	key := protocol.HostFaultsKey(job.ID)
	var last error
	for range 8 {
		rec, rev, err := w.getHostFaults(ctx, job.ID)
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
		pctx, cancel := context.WithTimeout(ctx, hostFaultCallTimeout)
		if rev == 0 {
			_, err = w.topo.Health.Create(pctx, key, data)
		} else {
			_, err = w.topo.Health.Update(pctx, key, data, rev)
		}
		cancel()
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSequence(err) {
			return nil, fmt.Errorf("worker: %s %s: %w", protocol.BucketHealth, key, err)
		}
		last = err // another worker wrote it meanwhile: read it again
	}
	return nil, fmt.Errorf("worker: %s %s: too many concurrent writers: %w", protocol.BucketHealth, key, last)
}

// isWrongSequence reports whether err is a KV update's revision conflict.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// forgetHostFaults removes the job's record once the job has ended (its
// result recorded, or its dead letter): only when this delivery saw one,
// so that a job without one costs no write.
func (a *attemptState) forgetHostFaults(ctx context.Context) {
	if a.hf == nil {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostFaultCallTimeout)
	defer cancel()
	if err := a.s.w.topo.Health.Delete(pctx, protocol.HostFaultsKey(a.job.ID)); err != nil {
		a.log.Warn().Err(err).Msg("host-fault record of the finished job not removed")
	}
	a.hf = nil
}

// servingHosts are the workers (by id) that serve pool with runner now:
// this one when a slot of it is in service, and every other worker whose
// heartbeat in bench-workers lists such a device in service and that is
// not draining.
func (w *Worker) servingHosts(ctx context.Context, pool, runner string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, s := range w.slots {
		if s.dev.Pool == pool && s.runner.Name() == runner && !s.outOfService() && !w.draining.Load() {
			out[w.cfg.ID] = true
		}
	}
	wctx, cancel := context.WithTimeout(ctx, hostFaultCallTimeout)
	defer cancel()
	watch, err := w.topo.Workers.WatchAll(wctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("worker: read %s: %w", protocol.BucketWorkers, err)
	}
	defer watch.Stop()
	for {
		select {
		case <-wctx.Done():
			return nil, fmt.Errorf("worker: read %s: %w", protocol.BucketWorkers, wctx.Err())
		case e, ok := <-watch.Updates():
			if !ok {
				return nil, fmt.Errorf("worker: read %s: watch ended", protocol.BucketWorkers)
			}
			if e == nil { // every current heartbeat is read
				return out, nil
			}
			var st protocol.WorkerStatus
			if json.Unmarshal(e.Value(), &st) != nil || st.ID == w.cfg.ID || st.Draining {
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

// everyHostSaid returns the dead letter's reason when rec shows that the
// job fails on every host: two distinct hosts said, unconfirmed, that they
// cannot run its harness, or every host serving its pool with its runner
// said it (at least one of them unconfirmed). "" otherwise, also when
// bench-workers cannot be read.
func (a *attemptState) everyHostSaid(ctx context.Context, rec *protocol.JobHostFaults, last string) string {
	unconfirmed := rec.Unconfirmed()
	switch {
	case len(unconfirmed) >= 2:
		return fmt.Sprintf("fails on every host: %d hosts (%s) said they cannot run the harness (last: %s)",
			len(unconfirmed), strings.Join(unconfirmed, ", "), last)
	case len(unconfirmed) == 0:
		return ""
	}
	serving, err := a.s.w.servingHosts(ctx, a.job.Pool, a.job.Runner)
	if err != nil {
		a.log.Warn().Err(err).Msg("which hosts serve the pool is not known: the job is handed on")
		return ""
	}
	if len(serving) == 0 {
		return "" // no host left to judge by: the job waits for one
	}
	for id := range serving {
		if !rec.Has(id) {
			return ""
		}
	}
	ids := slices.Sorted(maps.Keys(serving))
	return fmt.Sprintf("fails on every host: every host serving pool %s with %s (%s) said it cannot run the harness (last: %s)",
		a.job.Pool, a.job.Runner, strings.Join(ids, ", "), last)
}

// hostFault decides a run that says its host cannot run the harness. The
// job under test can say so falsely (print pytest's ImportError and exit
// 4), so the host leaves service only when the runner's probe (a
// known-good job) fails too, or, without one, when the board's check
// fails or maxHostFaultStreak different jobs in a row said so. The host
// is recorded in the job's host-fault record, so it never runs the job
// again and the delivery does not count against MaxDeliver; the job goes
// to another host at once, or is dead-lettered when it fails on every
// host (everyHostSaid). The outcome's failure, which the slot's health
// follows, is the host's fault when it leaves service, else nil.
func (a *attemptState) hostFault(ctx context.Context, host *device.HostError) outcome {
	s, w := a.s, a.s.w
	w.failedOnHost(a.job.ID, s.runner)
	// The board ran nothing of the job's: no pass in its history.
	s.mu.Lock()
	s.lastJob = ""
	s.mu.Unlock()
	if host.Found {
		// A fault the worker found itself (its build cache, its mirror)
		// is the host's alone, not the job's word: the slots pause
		// (Worker.hostFault) and the job is retried as after an
		// infrastructure failure.
		o := outcome{act: actRetry, cause: fmt.Errorf("%w (found by the worker)", host)}
		o.failure = &device.HostError{Reason: host.Reason + " (found by the worker)", Found: true}
		return o
	}
	confirmed, probed, why := s.confirmHostFault(ctx)
	fault := protocol.HostFault{Time: time.Now().UTC(), Reason: truncate(host.Reason, 1000), Confirmed: confirmed}
	var leave *device.HostError
	switch {
	case confirmed:
		leave = &device.HostError{Reason: host.Reason + " (" + why + ")"}
	case !probed:
		if n := w.streaks.fault(s.runner.Name(), a.job.ID); n >= maxHostFaultStreak {
			leave = &device.HostError{Reason: fmt.Sprintf("%d jobs in a row said so, with no health_probe configured to confirm or deny it and the board check passing (last: %s)", n, host.Reason)}
		}
	}
	if leave != nil {
		// Out of service before the job is judged, so this host is not
		// counted among those still serving the pool.
		w.hostFault(s.runner, leave)
	}
	rec, err := w.updateHostFaults(ctx, a.job, func(r *protocol.JobHostFaults) { r.Hosts[w.cfg.ID] = fault })
	var o outcome
	switch {
	case err != nil:
		// No record: the delivery counts, as before records.
		a.log.Warn().Err(err).Msg("host-fault record not stored: this delivery counts against the job's")
		if a.counted() >= maxHostFaults && !confirmed {
			o = outcome{act: actDead, reason: fmt.Sprintf("fails on every host: %d deliveries said the host cannot run the harness (last: %s; %s)", a.counted(), host.Reason, why)}
		} else {
			o = outcome{act: actRetry, cause: fmt.Errorf("%w (%s)", host, why), delay: w.cfg.backoff(a.deliveries)}
		}
	default:
		a.hf = rec
		if reason := a.everyHostSaid(ctx, rec, host.Reason+"; "+why); reason != "" {
			o = outcome{act: actDead, reason: reason}
		} else {
			o = outcome{act: actRetry, cause: fmt.Errorf("%w (%s); handed to another host: this one never runs the job again", host, why), delay: hostPassDelay(0)}
		}
	}
	if leave == nil {
		a.log.Warn().Str("reason", host.Reason).Str("probe", why).Msg("the job says this host cannot run the harness, but nothing confirms it: the host stays in service and never runs this job again")
	}
	// The slots left service above (w.hostFault); the board itself is not
	// to blame, so the slot's health follows no failure.
	return o
}

// passHostFault hands back a job this host said it cannot run: it never
// runs it again. The pass is counted in the job's record (not against
// MaxDeliver); when every host serving the pool has said so by now, the
// job is dead-lettered instead.
func (a *attemptState) passHostFault(ctx context.Context) outcome {
	w := a.s.w
	if reason := a.everyHostSaid(ctx, a.hf, "see the record"); reason != "" {
		return outcome{act: actDead, reason: reason}
	}
	passes := a.hf.Passes
	rec, err := w.updateHostFaults(ctx, a.job, func(r *protocol.JobHostFaults) { r.Passes++ })
	if err != nil {
		a.log.Warn().Err(err).Msg("host-fault pass not recorded: this delivery counts against the job's")
	} else {
		a.hf = rec
	}
	return outcome{act: actPass, delay: hostPassDelay(passes), reason: "this host said it cannot run the job's harness: handed back for another host"}
}
