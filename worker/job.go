package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// attemptState is what one delivery of one job is about.
type attemptState struct {
	s       *slot
	msg     jetstream.Msg
	raw     []byte
	job     *protocol.Job
	attempt int
	// deliveries is this message's delivery count, which MaxDeliver bounds.
	// It equals attempt unless the job was re-queued by `dlq retry`, whose
	// message carries the attempts made before (protocol.HeaderPriorAttempts).
	deliveries int
	// excused is how many of those deliveries this worker handed back
	// because it could not record their result (the host's fault): they
	// do not count against MaxDeliver (see counted).
	excused int
	log     zerolog.Logger
	started time.Time
	// hb keeps the claim alive (InProgress) from the delivery's first
	// moment until it is settled; hbLater: the background settle stops it.
	hb      *claimKeeper
	hbLater bool
	// notes qualify the attempt's result (Result.Notes): limits the
	// worker imposed.
	notes []string
}

// counted is the deliveries MaxDeliver bounds: those the job may be blamed
// for.
func (a *attemptState) counted() int { return a.deliveries - a.excused }

// claimKeeper sends InProgress every Heartbeat until stopped.
type claimKeeper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// keepClaim starts the claim's heartbeat. It runs from the delivery's first
// moment, before any store call, dead letter or run: a slow store must not
// let the claim lapse while this slot holds the job (the job would be
// delivered to another slot and run twice).
func (a *attemptState) keepClaim(ctx context.Context) *claimKeeper {
	hctx, cancel := context.WithCancel(ctx)
	k := &claimKeeper{cancel: cancel, done: make(chan struct{})}
	s, msg := a.s, a.msg
	go func() {
		defer close(k.done)
		t := time.NewTicker(s.w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					s.w.metrics.heartbeatFailed(HeartbeatInProgress)
					s.log.Debug().Err(err).Msg("in-progress not sent")
				}
			}
		}
	}()
	return k
}

// release stops the heartbeat without waiting for it.
func (k *claimKeeper) release() { k.cancel() }

// stop stops the heartbeat and waits until it sends no more.
func (k *claimKeeper) stop() {
	k.cancel()
	<-k.done
}

// handle processes one delivery. It always settles the message (ack, nak,
// term) unless the worker is stopping hard, in which case the job is handed
// back, or passes it to another slot. It returns the infrastructure failure
// (nil if none) so the slot checks, resets or retires its device.
func (s *slot) handle(msg jetstream.Msg) error {
	s.mu.Lock()
	s.lastJob = ""
	s.mu.Unlock()
	a := &attemptState{s: s, msg: msg, raw: msg.Data(), deliveries: 1, log: s.log, started: time.Now().UTC()}
	ctx := s.w.runCtx
	a.hb = a.keepClaim(ctx)
	defer func() {
		if !a.hbLater {
			a.hb.stop()
		}
	}()
	var stored time.Time
	if meta, err := msg.Metadata(); err == nil {
		a.deliveries = int(meta.NumDelivered)
		stored = meta.Timestamp
	}
	a.attempt = priorAttempts(msg) + a.deliveries
	pool, _, _ := protocol.ParseJobSubject(msg.Subject())

	// Defaults the publisher left out are applied as submit applies them.
	job, err := protocol.DecodeQueuedJob(a.raw, msg.Subject(), stored)
	if err == nil && job.Pool != pool {
		err = &protocol.FieldError{Field: "pool", Rule: fmt.Sprintf("is %q but the job was published for pool %q", job.Pool, pool)}
	}
	if err == nil {
		// The id must bind the content: a job published under another
		// job's id (anyone who may submit can publish) would otherwise
		// record its result for that job, and the real one be skipped.
		err = job.CheckID()
	}
	if err != nil {
		a.job = job // may be partly decoded; used only if its id and run are valid
		a.invalid(ctx, pool, err.Error())
		return nil
	}
	a.job = job
	a.excused = s.w.excused.count(job.ID)
	a.log = s.log.With().Str("run", job.Run).Str("job", job.ID).Int("attempt", a.attempt).Logger()

	if a.counted() > s.w.cfg.MaxDeliver {
		// Every failure a worker sees on the last delivery dead-letters
		// the job itself, with its reason; so a delivery past the limit
		// means the last attempt ended without the worker settling it.
		a.dead(ctx, fmt.Sprintf("exhausted %d deliveries: the last attempt ended unsettled (its worker crashed, lost its NATS connection, or was stopped hard and handed the job back)", s.w.cfg.MaxDeliver))
		return nil
	}
	if s.w.cancels.isCancelled(job.Run) {
		a.finish(ctx, a.newResult(protocol.StatusCancelled, &protocol.ResultError{Class: protocol.ClassCancelled, Message: "run cancelled before the job started"}), nil)
		return nil
	}
	// A result already there means an earlier attempt finished and only its
	// ack was lost: record nothing new. A store that does not answer within
	// StoreCallTimeout does not hold the job up: it runs (a second result
	// would be refused by the write-once store). But if its result could not
	// be recorded at all (no spool, or a spool that refuses writes), the job
	// is handed back before it runs.
	// The job's result is found whatever created_at it was published with
	// (storage.JobMarkerKey): a republished job is not run again.
	switch key, found, err := s.w.rec.recorded(ctx, job.Run, job.ID, storage.ResultKey(job.CreatedAt, job.Run, job.ID)); {
	case err == nil && found && !a.requeuedOverDeadLetter(ctx, key):
		a.log.Info().Msg("result already recorded; acknowledging the duplicate delivery")
		a.ack(ctx)
		return nil
	case err != nil:
		if !errors.Is(err, errStoreNotAsked) {
			s.w.metrics.storageError(StorageOpExists)
		}
		a.log.Debug().Err(err).Msg("no check for an earlier result; the job runs")
		if rerr := s.w.rec.canRecord(ctx); rerr != nil {
			a.handBackUnrecorded(ctx, rerr)
			return nil
		}
	}
	if job.Runner != s.runner.Name() {
		a.invalid(ctx, pool, fmt.Sprintf("runner: pool %s is served by the %s runner, not %q", pool, s.runner.Name(), job.Runner))
		return nil
	}
	if err := s.runner.Check(job.Benchmark); err != nil {
		a.invalid(ctx, pool, err.Error())
		return nil
	}
	if n := job.Benchmark.LoopCount + job.Benchmark.WarmupCount; n > s.w.cfg.MaxLoopCount {
		a.invalid(ctx, pool, fmt.Sprintf("benchmark.loop_count + warmup_count %d: this worker runs at most %d iterations a job", n, s.w.cfg.MaxLoopCount))
		return nil
	}
	if k, ok := device.Lookup(s.runner.Name()); ok {
		if err := k.CheckWheels(job); err != nil {
			a.invalid(ctx, pool, err.Error())
			return nil
		}
	}
	// A board that failed this job before passes it to an idle board of
	// the pool that has not, when there is one (DESIGN §3: a hang leaves
	// the board suspect; the job deserves a fresh board).
	if s.w.failed.has(job.ID, s.dev.ID) && s.w.passOn(ctx, s, msg, job.ID) {
		a.log.Info().Msg("this board failed the job before: passed it to another board of the pool")
		return nil
	}
	return a.run(ctx)
}

// run executes the job on the device and settles the message by outcome.
// It returns the infrastructure failure, if any.
//
// Once the runner has returned with an outcome to record (passed, failed,
// cancelled, invalid), the result is made durable, the terminal event
// published and the message acked in the background (slot.settleLater),
// so the device takes its next job at once; the ack still follows the
// durable result, and the job's claim is kept alive (InProgress) until
// the message is settled. Infrastructure failures are settled here: the
// slot checks the device before it claims again.
func (a *attemptState) run(ctx context.Context) error {
	s, job := a.s, a.job
	s.mu.Lock()
	s.lastJob = job.ID
	s.mu.Unlock()
	s.setState(protocol.DeviceBusy, job.ID, job.Run, "")
	s.w.metrics.claimed(a.msg, a.attempt-a.deliveries)
	a.event(ctx, protocol.Event{Kind: protocol.EventClaimed, Message: fmt.Sprintf("%s on %s", job.Benchmark.Model, s.dev.ID)})
	a.log.Info().Str("model", job.Benchmark.Model).Msg("job claimed")

	announce := newPhaseAnnouncer(phaseEventDelay, func(phase string, began time.Time) {
		a.event(ctx, protocol.Event{Kind: protocol.EventPhase, Phase: phase, Time: began.UTC()})
	})
	// The job's directory is made only if its log outgrows memory; it is
	// removed once the attempt is settled (its artifacts uploaded).
	var dir string
	rec := newRecorder(func() (string, error) {
		if dir == "" {
			d, err := os.MkdirTemp(s.w.cfg.WorkDir, "benchfleet-"+job.ID+"-")
			if err != nil {
				return "", fmt.Errorf("job directory: %w", err)
			}
			dir = d
		}
		return dir, nil
	}, announce.began)

	timeout := job.Limits.Timeout.D()
	if timeout <= 0 {
		timeout = s.w.cfg.JobTimeout
	}
	if timeout > s.w.cfg.MaxJobTimeout {
		a.notes = append(a.notes, fmt.Sprintf("the job asked for a timeout of %s; this worker allows at most %s, which bounded it", timeout, s.w.cfg.MaxJobTimeout))
		a.log.Warn().Dur("asked", timeout).Dur("max", s.w.cfg.MaxJobTimeout).Msg("job timeout cut to the worker's longest")
		timeout = s.w.cfg.MaxJobTimeout
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unregister := s.w.cancels.register(job.Run, cancel)
	defer unregister()
	tctx, tcancel := context.WithTimeoutCause(jctx, timeout, fmt.Errorf("job timed out after %s", timeout))
	defer tcancel()

	// The claim's heartbeat (started at claim) runs until the job is
	// settled; a job that timed out or whose run was cancelled stops it at
	// once: a runner slow to die must not hold its claim past the ack wait.
	defer context.AfterFunc(tctx, func() {
		if !errors.Is(context.Cause(tctx), context.Canceled) {
			a.hb.release()
		}
	})()
	// endAttempt ends the attempt: the claim's heartbeat stops and the job's
	// directory goes.
	endAttempt := func() {
		a.hb.stop()
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	later := false // endAttempt is the background finish's to call
	defer func() {
		if !later {
			endAttempt()
		}
	}()
	settle := func(r *protocol.Result, files []storage.ArtifactFile) {
		if r.Build == nil {
			r.Build = rec.builtWith(job)
		}
		if r.Build != nil && r.Build.SetupS > 0 {
			r.Phases.SetupS = r.Build.SetupS // one figure for the one setup
		}
		later = true
		a.hbLater = true
		s.settleLater(func() {
			defer endAttempt()
			a.finish(ctx, r, files)
		})
	}

	samples := s.sample(tctx)
	out, runErr := safeRun(device.WithAttempt(tctx, a.attempt), s.runner, job, s.dev, rec)
	cause := context.Cause(tctx)
	tcancel()
	announce.stop()
	phases, files := rec.finish()
	var telemetry *protocol.Telemetry
	if from, to, ok := rec.window(device.PhaseTiming); ok {
		telemetry = device.Summarize(samples(), from, to)
	}

	switch {
	case ctx.Err() != nil:
		// The worker is stopping hard: hand the job back, record nothing.
		a.log.Warn().Msg("worker stopping: job handed back for redelivery")
		_ = a.msg.Nak()
		return nil
	case errors.Is(cause, errRunCancelled):
		r := a.newResult(protocol.StatusCancelled, &protocol.ResultError{Class: protocol.ClassCancelled, Message: "run cancelled while the job was running"})
		r.Phases = phases
		settle(r, files)
		return nil
	case runErr == nil && out == nil:
		runErr = device.Infra("runner returned no outcome")
	}
	if runErr == nil {
		r := a.newResult(protocol.StatusPassed, nil)
		a.fill(r, out, phases)
		a.telemetry(r, telemetry)
		if !r.PCC.Passed {
			r.Status = protocol.StatusFailed
			r.Error = &protocol.ResultError{Class: protocol.ClassBenchmark,
				Message: fmt.Sprintf("PCC %.6f is below the required %.4f", r.PCC.Value, r.PCC.Min)}
		}
		settle(r, files)
		return nil
	}
	var inv *device.InvalidError
	var bench *device.BenchmarkError
	switch {
	case errors.As(runErr, &inv):
		r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassInvalid, Message: inv.Reason})
		r.Phases = phases
		a.deadLetter(ctx, inv.Error())
		settle(r, files)
		return nil
	case errors.As(runErr, &bench):
		r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassBenchmark, Message: bench.Reason})
		a.fill(r, out, phases)
		if bench.PCCRequired > 0 {
			// The harness's own check failed: its figures, not a re-judgement.
			r.PCC = protocol.PCC{Value: bench.PCC, Min: bench.PCCRequired}
		}
		a.telemetry(r, telemetry)
		settle(r, files)
		return nil
	}
	// Infrastructure failure. A timeout is a hang: the board is reset.
	if cause != nil && errors.Is(runErr, context.DeadlineExceeded) {
		runErr = device.Hang("%v", cause) // "job timed out after ..."
	}
	var host *device.HostError
	if errors.As(runErr, &host) {
		return a.hostFault(ctx, host)
	}
	if !device.IsSetup(runErr) {
		s.w.failed.add(job.ID, s.dev.ID)
	}
	a.retry(ctx, runErr)
	return runErr
}

// maxHostFaults is how many host faults a job may cause (its deliveries
// count): at the last it is dead-lettered as failing on every host.
const maxHostFaults = 2

// hostFault handles a run that says its host cannot run the harness. The
// job under test can say so falsely (print pytest's ImportError and exit
// 4), so the host leaves service only when the runner's probe (a
// known-good job) fails too, or, without one, the board's check; the job
// goes to another host at once, and after maxHostFaults deliveries it is
// dead-lettered. It returns what the slot's health follows: the fault
// when confirmed, else nil (the board stays in service).
func (a *attemptState) hostFault(ctx context.Context, host *device.HostError) error {
	s := a.s
	confirmed, why := true, "found by the worker"
	if !host.Found {
		confirmed, why = s.confirmHostFault(ctx)
	}
	s.w.failedOnHost(a.job.ID, s.runner)
	// A fault the worker found itself is the host's alone: it never
	// makes the job one that fails on every host.
	if a.counted() >= maxHostFaults && !host.Found {
		a.dead(ctx, fmt.Sprintf("fails on every host: %d deliveries said the host cannot run the harness (last: %s; %s)", a.counted(), host.Reason, why))
	} else {
		a.retryAfter(ctx, fmt.Errorf("%w (%s)", host, why), 0)
	}
	if !confirmed {
		a.log.Warn().Str("reason", host.Reason).Str("probe", why).Msg("the job says this host cannot run the harness, but the host passes its probe: it stays in service")
		return nil
	}
	return &device.HostError{Reason: host.Reason + " (" + why + ")", Found: host.Found}
}

// sample reads the slot's sensors every device.SampleInterval until ctx
// ends (the attempt is over); the returned func waits for the sampler and
// returns the samples. Without a Sampler it samples nothing.
func (s *slot) sample(ctx context.Context) func() []device.Sample {
	if s.sampler == nil {
		return func() []device.Sample { return nil }
	}
	var samples []device.Sample
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(device.SampleInterval)
		defer t.Stop()
		warned := false
		for {
			smp, err := s.sampler.Sample(ctx, s.dev)
			switch {
			case err == nil:
				samples = append(samples, smp)
			case errors.Is(err, device.ErrNoSample):
			case ctx.Err() == nil && !warned:
				warned = true
				s.log.Warn().Err(err).Msg("telemetry: sample failed")
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() []device.Sample {
		<-done
		return samples
	}
}

// priorAttempts reads protocol.HeaderPriorAttempts (0 when absent or not a
// small non-negative number: a bad header never makes a job invalid).
func priorAttempts(msg jetstream.Msg) int {
	h := msg.Headers()
	if h == nil {
		return 0
	}
	n, err := strconv.Atoi(h.Get(protocol.HeaderPriorAttempts))
	if err != nil || n < 0 || n > 10000 {
		return 0
	}
	return n
}

// safeRun turns a runner panic into an infrastructure error with a stack.
func safeRun(ctx context.Context, r device.Runner, job *protocol.Job, dev device.Device, rec device.Recorder) (out *device.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = device.Infra("runner %s panicked: %v\n%s", r.Name(), p, debug.Stack())
		}
	}()
	return r.Run(ctx, job, dev, rec)
}

func (a *attemptState) newResult(status protocol.Status, rerr *protocol.ResultError) *protocol.Result {
	j := a.job
	s := a.s
	r := &protocol.Result{
		Schema: protocol.SchemaResult, Job: j.ID, Run: j.Run, RunCreatedAt: j.CreatedAt,
		Pool: j.Pool, Runner: j.Runner, Status: status, Error: rerr, Attempt: a.attempt,
		StartedAt: a.started, FinishedAt: time.Now().UTC(),
		Worker:    protocol.WorkerRef{ID: s.w.cfg.ID, Host: s.w.host, Version: s.w.cfg.Version},
		Device:    protocol.DeviceRef{ID: s.dev.ID, Pool: s.dev.Pool, Arch: s.dev.Arch, Chips: s.dev.Chips, Firmware: s.dev.Firmware},
		Benchmark: j.Benchmark, Source: j.Source, Labels: j.Labels,
		PCC: protocol.PCC{Min: j.Limits.PCCMin}, Notes: append([]string(nil), a.notes...),
	}
	if r.PCC.Min == 0 {
		r.PCC.Min = protocol.DefaultPCCMin
	}
	return r
}

func (a *attemptState) fill(r *protocol.Result, out *device.Outcome, phases protocol.Phases) {
	r.Phases = phases
	if out == nil {
		return
	}
	if out.Phases != nil {
		up, setup := r.Phases.UploadS, r.Phases.SetupS
		r.Phases = *out.Phases
		r.Phases.UploadS = up
		if r.Phases.SetupS == 0 {
			r.Phases.SetupS = setup
		}
	}
	r.Measurements = out.Measurements
	r.PCC.Value = out.PCCValue
	switch {
	case a.job.Limits.PCCMin > 0 || !out.PCCJudged:
		// The job's own requirement, or a runner that leaves the
		// judgement to the worker (newResult set Min).
		r.PCC.Passed = out.PCCValue >= r.PCC.Min
	case out.PCCRequired > 0:
		// The harness judged its own check at the PCC it requires of this
		// model; it says what it reached.
		r.PCC.Min = out.PCCRequired
		r.PCC.Passed = out.PCCValue >= r.PCC.Min
	default:
		// The harness passed its check without saying the PCC it
		// required (forge): its judgement stands.
		r.PCC.Min = 0
		r.PCC.Passed = true
	}
	r.Notes = append(r.Notes, out.Notes...)
	r.Upstream = out.Upstream
	r.Report = out.Report
	if out.Arch != "" {
		r.Device.Arch = out.Arch
	}
	if out.Firmware != "" {
		r.Device.Firmware = out.Firmware
	}
}

// telemetry attaches the board's telemetry to r, with a note when the
// power covers only some of the board's chips.
func (a *attemptState) telemetry(r *protocol.Result, t *protocol.Telemetry) {
	r.Telemetry = t
	if t == nil || t.PowerW == nil || t.PowerChips == 0 || t.PowerChips >= r.Device.Chips {
		return
	}
	r.Notes = append(r.Notes, fmt.Sprintf("the board power covers %d of its %d chips (%s): tt-kmd has hwmon on PCIe-attached chips only",
		t.PowerChips, r.Device.Chips, t.Source))
}

// finish makes r durable, publishes the terminal event and acks. If the
// result cannot be made durable the job is handed back with a delay.
func (a *attemptState) finish(ctx context.Context, r *protocol.Result, files []storage.ArtifactFile) {
	if r.Upstream != "" {
		r.Upstream = storage.ArtifactKey(r.Run, r.Job, r.Attempt, r.Upstream)
	}
	// Each store call of the delivery has its own short deadline (the
	// spool's CallTimeout, or StoreCallTimeout without one): a store that
	// does not answer is a store that is down.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	key, spooled, err := a.s.w.cfg.Sink.Deliver(dctx, r, files)
	cancel()
	switch {
	case err == nil && spooled:
		a.s.w.rec.observe(errResultSpooled)
	case err == nil || errors.Is(err, storage.ErrExists):
		a.s.w.rec.observe(nil)
	case ctx.Err() == nil:
		a.s.w.rec.observe(err)
	}
	switch {
	case errors.Is(err, storage.ErrExists):
		a.log.Info().Msg("result already recorded by an earlier attempt; nothing new recorded")
		a.ack(ctx)
		a.s.w.excused.forget(r.Job)
		return
	case err != nil && ctx.Err() != nil:
		// The worker is stopping hard: hand the job back, as a running
		// job is (a redelivery that finds the result after all only acks).
		a.log.Warn().Err(err).Msg("worker stopping: result not stored; job handed back for redelivery")
		_ = a.msg.Nak()
		return
	case err != nil && unrecordable(err):
		// Neither the store nor the spool takes results: the host's fault,
		// not the job's. No dead letter; the slots claim nothing until a
		// result can be recorded again.
		a.s.w.metrics.storageError(StorageOpDeliver)
		a.handBackUnrecorded(ctx, fmt.Errorf("result not stored: %w", err))
		return
	case err != nil:
		// An infrastructure failure like any other (storage down before
		// spooling): retried with backoff, and on the last delivery
		// dead-lettered with this reason, not left for the next delivery
		// to guess at.
		a.s.w.metrics.storageError(StorageOpDeliver)
		a.log.Error().Err(err).Msg("result not durable")
		a.retry(ctx, fmt.Errorf("result not stored: %w", err))
		return
	}
	kind := map[protocol.Status]protocol.EventKind{
		protocol.StatusPassed: protocol.EventPassed, protocol.StatusCancelled: protocol.EventCancelled,
	}[r.Status]
	if kind == "" {
		kind = protocol.EventFailed
	}
	msg := ""
	if r.Error != nil {
		msg = r.Error.Message
	}
	if spooled {
		msg = strings.TrimSpace(msg + " " + protocol.SpooledNote)
	}
	a.s.w.metrics.recorded(r, spooled)
	// Ack before the terminal event: a waiter that acts on the event (and,
	// say, stops the worker) finds the job already settled.
	a.ack(ctx)
	a.s.w.failed.forget(r.Job)
	a.s.w.excused.forget(r.Job)
	a.event(ctx, protocol.Event{Kind: kind, Status: r.Status, Result: key, ResultSpooled: spooled, Message: msg,
		SamplesPerSec: r.Measurements.SamplesPerSec, PCC: r.PCC.Value})
	a.log.Info().Str("status", string(r.Status)).Float64("samples_per_sec", r.Measurements.SamplesPerSec).
		Float64("pcc", r.PCC.Value).Bool("spooled", spooled).Msg("job finished")
}

func (a *attemptState) ack(ctx context.Context) {
	// The result is durable: the ack completes even when the worker is
	// stopping hard (ctx cancelled), so the job is not delivered again.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.msg.DoubleAck(actx); err != nil {
		// The result is durable; a redelivery will find it and ack.
		a.log.Warn().Err(err).Msg("ack not confirmed")
	}
}

// retry handles an infrastructure failure: redeliver with backoff, or dead
// letter after MaxDeliver.
func (a *attemptState) retry(ctx context.Context, cause error) {
	a.retryAfter(ctx, cause, a.s.w.cfg.backoff(a.deliveries))
}

// retryAfter redelivers after delay, or dead-letters after MaxDeliver.
func (a *attemptState) retryAfter(ctx context.Context, cause error, delay time.Duration) {
	if a.counted() >= a.s.w.cfg.MaxDeliver {
		what := fmt.Sprintf("the last of %d attempts", a.s.w.cfg.MaxDeliver)
		if a.attempt != a.deliveries { // re-queued by dlq retry: attempts count on
			what = fmt.Sprintf("attempt %d, the last of %d since it was re-queued", a.attempt, a.s.w.cfg.MaxDeliver)
		}
		a.dead(ctx, fmt.Sprintf("infrastructure failure on %s: %v", what, cause))
		return
	}
	a.log.Warn().Err(cause).Dur("delay", delay).Msg("infrastructure failure; job will be retried")
	a.nakAfter(ctx, fmt.Sprintf("%v (retry in %s)", cause, delay), delay)
}

// handBackUnrecorded hands back a job whose result this host cannot record
// now (the store does not answer and there is no spool, or the spool
// refuses writes): a full disk is the host's fault, not the job's, so no
// dead letter is written and this delivery does not count against
// MaxDeliver here (excusedDeliveries). Recording is marked blocked, so the
// worker's slots claim nothing until a result can be recorded again.
func (a *attemptState) handBackUnrecorded(ctx context.Context, cause error) {
	s := a.s
	s.w.rec.block(cause)
	s.w.excused.add(a.job.ID)
	delay := s.w.cfg.Backoff
	a.log.Error().Err(cause).Dur("delay", delay).Msg("this worker cannot record results now: job handed back, no dead letter")
	a.nakAfter(ctx, fmt.Sprintf("%v: this worker cannot record results now and claims nothing until it can; the job is handed back (retry in %s)", cause, delay), delay)
}

// nakAfter hands the job back for redelivery after delay, with a retrying
// event saying why.
func (a *attemptState) nakAfter(ctx context.Context, why string, delay time.Duration) {
	a.s.w.metrics.retried(a.job.Pool)
	a.event(ctx, protocol.Event{Kind: protocol.EventRetrying, Message: why})
	if err := a.msg.NakWithDelay(delay); err != nil {
		a.log.Warn().Err(err).Msg("nak not sent; the job is redelivered after ack-wait")
	}
	// The job is back in its queue once the delay is over: the pool's
	// slots must not skip its priority as empty then.
	if _, prio, err := protocol.ParseJobSubject(a.msg.Subject()); err == nil {
		hint, i := a.s.hint, slices.Index(protocol.Priorities, prio)
		time.AfterFunc(delay, func() { hint.publishedTo(i) })
	}
}

// invalid handles a job that cannot run: dead letter with the reason, plus
// a failed result when the job's id and run are themselves valid and the id
// is its content's (CheckID: a result is never recorded for an id the
// payload does not own).
func (a *attemptState) invalid(ctx context.Context, pool, reason string) {
	reason = "invalid job: " + strings.TrimPrefix(reason, "invalid job: ")
	if a.job != nil && protocol.ValidID("id", a.job.ID) == nil && protocol.ValidID("run", a.job.Run) == nil && protocol.ValidPool(a.job.Pool) &&
		a.job.CheckID() == nil {
		a.log = a.s.log.With().Str("run", a.job.Run).Str("job", a.job.ID).Int("attempt", a.attempt).Logger()
		a.deadLetterPool(ctx, pool, reason)
		if a.job.CreatedAt.IsZero() {
			a.job.CreatedAt = a.started
		}
		r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassInvalid, Message: reason})
		a.finish(ctx, r, nil)
		return
	}
	a.log.Warn().Str("reason", reason).Msg("invalid job dead-lettered")
	if err := a.deadLetterPool(ctx, pool, reason); err != nil {
		a.handBack(ctx, reason, err)
		return
	}
	_ = a.msg.TermWithReason(truncate(reason, 200))
}

// dead dead-letters a job that ran out of deliveries, records the dead
// letter's error result (recordDead; a deliberate `dlq retry` can still
// produce a result that replaces it) and terminates the message.
func (a *attemptState) dead(ctx context.Context, reason string) {
	a.log.Error().Str("reason", reason).Msg("job dead-lettered")
	a.s.w.failed.forget(a.job.ID)
	a.s.w.excused.forget(a.job.ID)
	if err := a.deadLetter(ctx, reason); err != nil {
		a.handBack(ctx, reason, err)
		return
	}
	a.recordDead(ctx, reason)
	a.event(ctx, protocol.Event{Kind: protocol.EventDead, Message: reason})
	_ = a.msg.TermWithReason(truncate(reason, 200))
}

// handBack returns a job whose dead letter could not be stored (e.g. while
// BENCH_DEAD elects a leader): terminating it would lose it, with neither a
// result nor a dead letter. A later delivery dead-letters it again. When
// the dead letter can never be stored (too big for the server or the
// stream even with only the payload's first bytes), handing back would go
// on forever: then MaxDeliver holds, and after its last delivery the job is
// terminated with the reason (logged and as a dead event).
func (a *attemptState) handBack(ctx context.Context, reason string, err error) {
	if tooBig(err) && a.counted() >= a.s.w.cfg.MaxDeliver {
		why := fmt.Sprintf("%s; its dead letter is too big to store (%v), so after %d deliveries it is dropped", reason, err, a.deliveries)
		a.log.Error().Str("reason", why).Msg("job terminated without a dead letter")
		a.recordDead(ctx, why)
		a.event(ctx, protocol.Event{Kind: protocol.EventDead, Message: why})
		_ = a.msg.TermWithReason(truncate(why, 200))
		return
	}
	a.log.Warn().Err(err).Msg("dead letter not stored; job handed back to dead-letter it again later")
	_ = a.msg.NakWithDelay(a.s.w.cfg.backoff(a.attempt))
}

// errCodeMsgTooBig is JetStream's "message size exceeds maximum allowed".
const errCodeMsgTooBig jetstream.ErrorCode = 10054

// tooBig reports whether a publish failed because of the message's size,
// which retrying does not heal.
func tooBig(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) || (errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeMsgTooBig)
}

// deadLetter publishes a dead letter for the job; a nil error means it is
// stored.
func (a *attemptState) deadLetter(ctx context.Context, reason string) error {
	pool := ""
	if a.job != nil {
		pool = a.job.Pool
	}
	return a.deadLetterPool(ctx, pool, reason)
}

// deadLetterPool publishes the dead letter. A payload over the job size
// limit is not embedded whole (it could not fit a message): the dead letter
// keeps its first protocol.DeadPayloadPrefix bytes, and the reason its size
// and sha256. If the publish still fails for a big payload, it is retried
// once with only the prefix.
func (a *attemptState) deadLetterPool(ctx context.Context, pool, reason string) error {
	payload := a.raw
	if len(payload) > protocol.MaxJobBytes {
		sum := sha256.Sum256(payload)
		reason = fmt.Sprintf("%s (payload of %d bytes not kept whole: the first %d bytes are, sha256 %s)",
			reason, len(payload), protocol.DeadPayloadPrefix, hex.EncodeToString(sum[:]))
		payload = payload[:protocol.DeadPayloadPrefix]
	}
	dl := protocol.DeadLetter{
		Schema: protocol.SchemaDead, Pool: pool, Reason: truncate(reason, protocol.MaxDeadReason), Attempts: a.attempt,
		Time: time.Now().UTC(), Worker: a.s.w.cfg.ID, Payload: payload,
	}
	if meta, err := a.msg.Metadata(); err == nil {
		dl.ID = fmt.Sprintf("seq-%d", meta.Sequence.Stream)
	}
	if _, prio, err := protocol.ParseJobSubject(a.msg.Subject()); err == nil && prio.Valid() {
		dl.Priority = prio
	}
	if a.job != nil && protocol.ValidID("id", a.job.ID) == nil {
		dl.ID = a.job.ID
		if protocol.ValidID("run", a.job.Run) == nil {
			dl.Run = a.job.Run
		}
	}
	publish := func() error {
		data, err := json.Marshal(dl)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		m := nats.NewMsg(protocol.DeadSubject(pool))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dead-%s-%d", dl.ID, a.attempt))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = a.s.w.js.PublishMsg(pctx, m)
		return err
	}
	err := publish()
	if err != nil && len(dl.Payload) > protocol.DeadPayloadPrefix {
		a.log.Warn().Err(err).Msg("dead letter not published; retrying with the payload's first bytes only")
		sum := sha256.Sum256(a.raw)
		dl.Reason = truncate(fmt.Sprintf("%s (payload of %d bytes not kept whole: the first %d bytes are, sha256 %s)",
			reason, len(a.raw), protocol.DeadPayloadPrefix, hex.EncodeToString(sum[:])), protocol.MaxDeadReason)
		dl.Payload = a.raw[:protocol.DeadPayloadPrefix]
		err = publish()
	}
	if err != nil {
		a.log.Error().Err(err).Msg("dead letter not published")
		return fmt.Errorf("dead letter: %w", err)
	}
	a.s.w.metrics.deadLettered(pool)
	a.s.w.notifyDead(dl, a.job)
	return nil
}

// event publishes a job event without waiting for its ack (see
// eventPublisher); failures are logged, never fatal.
func (a *attemptState) event(ctx context.Context, e protocol.Event) {
	if a.job == nil {
		return
	}
	e.Schema = protocol.SchemaEvent
	e.Run, e.Job = a.job.Run, a.job.ID
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Pool = a.job.Pool
	e.Worker = a.s.w.cfg.ID
	e.Device = a.s.dev.ID
	e.Attempt = a.attempt
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	a.s.w.events.publish(protocol.WorkerEventSubject(e.Run, e.Job), data, string(e.Kind))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
