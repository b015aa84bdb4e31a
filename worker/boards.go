package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// maxFailedJobs bounds failedBoards: past it the oldest entry is dropped
// (the job then may run on a board that failed it before, as it would on
// another host).
const maxFailedJobs = 4096

// failedBoards remembers which boards of this worker an unfinished job
// failed on (an infrastructure failure), so its redelivery goes to another
// board of the pool when one is free. It knows this worker's boards only:
// a job redelivered to another host runs there.
type failedBoards struct {
	mu    sync.Mutex
	jobs  map[string]map[string]bool // job id -> device ids
	order []string                   // insertion order, for the bound
}

func newFailedBoards() *failedBoards { return &failedBoards{jobs: map[string]map[string]bool{}} }

func (f *failedBoards) add(job, dev string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	devs, ok := f.jobs[job]
	if !ok {
		if len(f.order) >= maxFailedJobs {
			delete(f.jobs, f.order[0])
			f.order = f.order[1:]
		}
		devs = map[string]bool{}
		f.jobs[job] = devs
		f.order = append(f.order, job)
	}
	devs[dev] = true
}

func (f *failedBoards) has(job, dev string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jobs[job][dev]
}

// forget drops a job that ended (a result or a dead letter).
func (f *failedBoards) forget(job string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[job]; !ok {
		return
	}
	delete(f.jobs, job)
	for i, j := range f.order {
		if j == job {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
}

// passOnWait bounds how long passOn waits for an idle slot between two
// fetches (a few FetchNoWait round trips) to reach its wait and take the job.
const passOnWait = 2 * time.Second

// passOn gives msg (job) to another slot of from's pool that is idle,
// waiting for work and suits the job (suits); it reports whether one took
// it. An idle slot caught between fetches is waited for (up to
// passOnWait): were the job run here instead, a board the job should not
// have would get it while a fitter one was free. The message keeps its
// delivery count: passing on costs no attempt.
func (w *Worker) passOn(ctx context.Context, from *slot, msg jetstream.Msg, job *protocol.Job) bool {
	deadline := time.Now().Add(passOnWait)
	for {
		anyIdle := false
		for _, s := range w.slots {
			if s == from || s.dev.Pool != from.dev.Pool || s.runner.Name() != from.runner.Name() || !s.suits(job) {
				continue
			}
			took, idle := s.offer(msg)
			if took {
				from.log.Debug().Str("to", s.dev.ID).Msg("job passed on")
				return true
			}
			anyIdle = anyIdle || idle
		}
		if !anyIdle || time.Now().After(deadline) {
			return false
		}
		sleepCtx(ctx, 5*time.Millisecond)
		if ctx.Err() != nil {
			return false
		}
	}
}

// suits reports whether s is a board for job: one that neither failed it
// before nor is one the job avoids.
func (s *slot) suits(job *protocol.Job) bool {
	return !s.w.failed.has(job.ID, s.dev.ID) && !s.avoided(job)
}

// avoided reports whether job avoids s's board (Job.Avoid names boards as
// "<worker id>/<device id>", as protocol.Result.Board gives them). Only a
// confirmation repeat avoids boards (avoids): the producer gives Avoid to
// repeats only, and only their passes are excused from MaxDeliver.
func (s *slot) avoided(job *protocol.Job) bool {
	return avoids(job) && slices.Contains(job.Avoid, s.w.cfg.ID+"/"+s.dev.ID)
}

// failedOnHost records that job failed on every slot of runner r here, so
// they pass it to another host's slots when one is idle.
func (w *Worker) failedOnHost(job string, r device.Runner) {
	for _, s := range w.slots {
		if s.runner == r {
			w.failed.add(job, s.dev.ID)
		}
	}
}

// hostFault takes every slot of runner r out of service: the harness's
// environment on this host is broken, so no board here can run its jobs.
// fleet status shows the reason.
//
// A fault the worker found itself (err.Found: its build cache's disk is
// full, its mirror cannot be read) is a pause: after BuildFaultPause the
// slots look again (their board check) and return to service, and a job
// that meets the fault again pauses them again.
func (w *Worker) hostFault(r device.Runner, err *device.HostError) {
	reason := fmt.Errorf("out of service: %w", err)
	var paused []*slot
	for _, s := range w.slots {
		// A slot already out (a quarantined board) keeps its own reason:
		// a pause must not end its quarantine.
		if s.runner == r && !s.outOfService() {
			s.outOfServiceFor(reason)
			paused = append(paused, s)
		}
	}
	if !err.Found {
		return
	}
	why := reason.Error()
	time.AfterFunc(w.cfg.BuildFaultPause, func() {
		for _, s := range paused {
			s.resumeAfter(why)
		}
	})
}

// resumeAfter ends a pause: the slot, out of service for reason and
// nothing else since, checks its board and returns to service.
func (s *slot) resumeAfter(reason string) {
	s.mu.Lock()
	paused := s.state == protocol.DeviceQuarantined && s.reason == reason
	s.mu.Unlock()
	if !paused {
		return
	}
	s.log.Info().Str("reason", reason).Msg("pause over: checking the board before the next job")
	select {
	case s.released <- struct{}{}:
	default:
	}
}
