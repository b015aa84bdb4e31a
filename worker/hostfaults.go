package worker

// Host faults are counted per host, in the job's host-fault record in
// bench-health: package hostfault holds the record and its rules; here the
// worker decides each delivery by them.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/hostfault"
)

// loadHostFaults reads job's host-fault record: nil when it has none, or
// when bench-health does not answer (logged; the deliveries then count as
// they did before such records).
func (a *attemptState) loadHostFaults(ctx context.Context) {
	w := a.s.w
	if w.topo == nil || w.topo.Health == nil {
		return
	}
	rec, _, err := hostfault.Get(ctx, w.topo.Health, a.job.ID)
	if err != nil {
		a.log.Warn().Err(fmt.Errorf("worker: %w", err)).Msg("host-fault record not read: the job's deliveries count as they come")
		return
	}
	a.hf = rec
}

// updateHostFaults applies change to job's record (hostfault.Update).
func (w *Worker) updateHostFaults(ctx context.Context, job *protocol.Job, change func(*protocol.JobHostFaults)) (*protocol.JobHostFaults, error) {
	if w.topo == nil || w.topo.Health == nil {
		return nil, errors.New("worker: no bench-health bucket")
	}
	rec, err := hostfault.Update(ctx, w.topo.Health, job, change)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	return rec, nil
}

// forgetHostFaults removes the job's record once the job has ended (its
// result recorded, or its dead letter): only when this delivery saw one,
// so that a job without one costs no write.
func (a *attemptState) forgetHostFaults(ctx context.Context) {
	if a.hf == nil {
		return
	}
	if err := hostfault.Delete(context.WithoutCancel(ctx), a.s.w.topo.Health, a.job.ID); err != nil {
		a.log.Warn().Err(err).Msg("host-fault record of the finished job not removed")
	}
	a.hf = nil
}

// serves reports whether this worker serves pool with runner now: a slot
// of it is in service and it is not draining.
func (w *Worker) serves(pool, runner string) bool {
	for _, s := range w.slots {
		if s.dev.Pool == pool && s.runner.Name() == runner && !s.outOfService() && !w.draining.Load() {
			return true
		}
	}
	return false
}

// everyHostSaid returns the dead letter's reason when rec shows that the
// job fails on every host (hostfault.EveryHost), "" otherwise, also when
// bench-workers cannot be read.
func (a *attemptState) everyHostSaid(ctx context.Context, rec *protocol.JobHostFaults, last string) string {
	w, pool, runner := a.s.w, a.job.Pool, a.job.Runner
	reason, err := hostfault.EveryHost(ctx, rec, pool, runner, last, func(ctx context.Context) (map[string]bool, error) {
		return hostfault.ServingHosts(ctx, w.topo.Workers, w.cfg.ID, w.serves(pool, runner), pool, runner)
	})
	if err != nil {
		a.log.Warn().Err(fmt.Errorf("worker: %w", err)).Msg("which hosts serve the pool is not known: the job is handed on")
	}
	return reason
}

// hostFault decides a run that says its host cannot run the harness. The
// job under test can say so falsely (print pytest's ImportError and exit
// 4), so the host leaves service only when the runner's probe (a
// known-good job) fails too, or, without one, when the board's check
// fails or hostfault.MaxStreak different jobs in a row said so. The host
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
		if n := w.streaks.Fault(s.runner.Name(), a.job.ID); n >= hostfault.MaxStreak {
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
		if a.counted() >= hostfault.MaxUnrecorded && !confirmed {
			o = outcome{act: actDead, reason: fmt.Sprintf("fails on every host: %d deliveries said the host cannot run the harness (last: %s; %s)", a.counted(), host.Reason, why)}
		} else {
			o = outcome{act: actRetry, cause: fmt.Errorf("%w (%s)", host, why), delay: w.cfg.backoff(a.deliveries)}
		}
	default:
		a.hf = rec
		if reason := a.everyHostSaid(ctx, rec, host.Reason+"; "+why); reason != "" {
			o = outcome{act: actDead, reason: reason}
		} else {
			o = outcome{act: actRetry, cause: fmt.Errorf("%w (%s); handed to another host: this one never runs the job again", host, why), delay: hostfault.PassDelay(0)}
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
	return outcome{act: actPass, delay: hostfault.PassDelay(passes), reason: "this host said it cannot run the job's harness: handed back for another host"}
}
