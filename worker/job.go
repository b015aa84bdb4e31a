package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/metrics"
	"github.com/benchfleet/benchfleet/worker/recorder"
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
	// hf is the job's host-fault record (hostfaults.go), read on a
	// redelivery; nil when it has none.
	hf      *protocol.JobHostFaults
	log     zerolog.Logger
	started time.Time
	// hb keeps the claim alive (InProgress) from the delivery's first
	// moment until it is settled.
	hb *claimKeeper
	// notes qualify the attempt's result (Result.Notes): limits the
	// worker imposed.
	notes []string
}

// claimedTrust is the trust of the stream msg was claimed from: untrusted
// when the server delivered it from StreamUntrusted (its metadata, which
// the server writes) or it was stored on one of that stream's subjects.
// Never read from the job's payload, which the publisher writes.
func claimedTrust(msg jetstream.Msg) protocol.Trust {
	if msg == nil {
		return protocol.TrustTrusted
	}
	if meta, err := msg.Metadata(); err == nil && meta.Stream == protocol.StreamUntrusted {
		return protocol.TrustUntrusted
	}
	if q, err := protocol.ParseQueue(msg.Subject()); err == nil {
		return q.Trust
	}
	return protocol.TrustTrusted
}

// counted is the deliveries MaxDeliver bounds: those the job may be blamed
// for (not those excused, nor passes by boards it avoids, nor those its
// host-fault record accounts for).
func (a *attemptState) counted() int {
	return a.deliveries - a.excused - a.passes() - a.hf.Excused()
}

// handle processes one delivery: it decides what the delivery comes to
// (process) and settles it (slot.settle). It returns the infrastructure
// failure (nil if none) so the slot checks, resets or retires its device.
func (s *slot) handle(msg jetstream.Msg) error {
	s.mu.Lock()
	s.lastJob = ""
	s.mu.Unlock()
	a := &attemptState{s: s, msg: msg, raw: msg.Data(), deliveries: 1, log: s.log, started: time.Now().UTC()}
	ctx := s.w.runCtx
	a.hb = a.keepClaim(ctx)
	o := a.process(ctx)
	s.settle(a, o)
	return o.failure
}

// process checks the delivery and runs its job, and returns what it came
// to. It settles nothing: the settler does.
func (a *attemptState) process(ctx context.Context) outcome {
	s, msg := a.s, a.msg
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
		return a.invalid(pool, err.Error())
	}
	if claimedTrust(msg).Untrusted() && !protocol.UntrustedRun(job.Run) {
		// The untrusted producer's job may write results only into its own
		// runs: one naming another run (a CI run's predictable id) would
		// take that run's result slot with its own figures. Dead-lettered
		// with no result.
		a.job = job
		return outcome{act: actTerm, pool: pool, reason: fmt.Sprintf("invalid job: run %q: a job of %s must be of a run named %s<...> (the untrusted producer's runs)",
			job.Run, protocol.StreamUntrusted, protocol.UntrustedRunPrefix)}
	}
	a.job = job
	a.excused = s.w.excused.count(job.ID)
	a.log = s.log.With().Str("run", job.Run).Str("job", job.ID).Int("attempt", a.attempt).Logger()
	if a.deliveries > 1 {
		// The hosts that said they cannot run it, and the deliveries that
		// cost the job nothing: a first delivery has no record yet.
		a.loadHostFaults(ctx)
	}

	if a.counted() > s.w.cfg.MaxDeliver {
		// Every failure a worker sees on the last delivery dead-letters
		// the job itself, with its reason; so a delivery past the limit
		// means the last attempt ended without the worker settling it.
		return outcome{act: actDead, reason: fmt.Sprintf("exhausted %d deliveries%s: the last attempt ended unsettled (its worker crashed, lost its NATS connection, or was stopped hard and handed the job back)", s.w.cfg.MaxDeliver, a.passesNote())}
	}
	if s.w.cancels.isCancelled(job.Run) {
		return outcome{act: actRecord, result: a.newResult(protocol.StatusCancelled, &protocol.ResultError{Class: protocol.ClassCancelled, Message: "run cancelled before the job started"})}
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
		return outcome{act: actAck}
	case err != nil:
		if !errors.Is(err, errStoreNotAsked) {
			s.w.metrics.StorageError(metrics.StorageOpExists)
		}
		a.log.Debug().Err(err).Msg("no check for an earlier result; the job runs")
		if rerr := s.w.rec.canRecord(ctx); rerr != nil {
			return outcome{act: actUnrecordable, cause: rerr}
		}
	}
	if job.Runner != s.runner.Name() {
		return a.invalid(pool, fmt.Sprintf("runner: pool %s is served by the %s runner, not %q", pool, s.runner.Name(), job.Runner))
	}
	if err := s.runner.Check(job.Benchmark); err != nil {
		return a.invalid(pool, err.Error())
	}
	if n := job.Benchmark.LoopCount + job.Benchmark.WarmupCount; n > s.w.cfg.MaxLoopCount {
		return a.invalid(pool, fmt.Sprintf("benchmark.loop_count + warmup_count %d: this worker runs at most %d iterations a job", n, s.w.cfg.MaxLoopCount))
	}
	if k, ok := device.Lookup(s.runner.Name()); ok {
		if err := k.CheckWheels(job); err != nil {
			return a.invalid(pool, err.Error())
		}
	}
	if a.hf.Has(s.w.cfg.ID) {
		return a.passHostFault(ctx)
	}
	// A board that failed this job before (a hang leaves a board suspect:
	// the job deserves a fresh one), or that the job avoids, passes it to an
	// idle board of this worker's pool that suits it, when there is one. A
	// board the job avoids hands it back for other workers' boards for its
	// first few deliveries, then runs it itself.
	avoided := s.avoided(job)
	if (avoided || s.w.failed.has(job.ID, s.dev.ID)) && s.w.passOn(ctx, s, msg, job) {
		why := "this board failed the job before"
		if avoided {
			why = "the job avoids this board"
		}
		a.log.Info().Msg(why + ": passed it to another board of the pool")
		return outcome{act: actPassedOn}
	}
	if avoided && a.deliveries <= avoidPasses {
		return outcome{act: actPass, delay: avoidPassDelay}
	}
	return a.run(ctx)
}

// run executes the job on the device and returns its outcome: a result to
// record (passed, failed, cancelled, invalid), settled in the slot's
// window so the device takes its next job at once; or an infrastructure
// failure, settled before the slot checks its device and claims again.
func (a *attemptState) run(ctx context.Context) outcome {
	s, job := a.s, a.job
	s.mu.Lock()
	s.lastJob = job.ID
	s.mu.Unlock()
	s.setState(protocol.DeviceBusy, job.ID, job.Run, "")
	s.w.metrics.Claimed(a.msg, a.attempt-a.deliveries)
	a.event(ctx, protocol.Event{Kind: protocol.EventClaimed, Message: fmt.Sprintf("%s on %s", job.Benchmark.Model, s.dev.ID)})
	a.log.Info().Str("model", job.Benchmark.Model).Msg("job claimed")

	announce := newPhaseAnnouncer(phaseEventDelay, func(phase string, began time.Time) {
		a.event(ctx, protocol.Event{Kind: protocol.EventPhase, Phase: phase, Time: began.UTC()})
	})
	// The job's directory is made only if its log outgrows memory; it is
	// removed once the attempt is settled (its artifacts uploaded).
	var dir string
	rec := recorder.New(func() (string, error) {
		if dir == "" {
			d, err := os.MkdirTemp(s.w.cfg.WorkDir, "benchfleet-"+job.ID+"-")
			if err != nil {
				return "", fmt.Errorf("job directory: %w", err)
			}
			dir = d
		}
		return dir, nil
	}, announce.began)
	cleanup := func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}

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

	samples := s.sample(tctx)
	out, runErr := safeRun(device.WithAttempt(tctx, a.attempt), s.runner, job, s.dev, rec)
	cause := context.Cause(tctx)
	tcancel()
	announce.stop()
	phases, files := rec.Finish()
	var telemetry *protocol.Telemetry
	if from, to, ok := rec.Window(device.PhaseTiming); ok {
		telemetry = device.Summarize(samples(), from, to)
	}

	record := func(r *protocol.Result) outcome {
		if r.Build == nil {
			r.Build = rec.BuiltWith(job)
		}
		if r.Build != nil && r.Build.SetupS > 0 {
			r.Phases.SetupS = r.Build.SetupS // one figure for the one setup
		}
		return outcome{act: actRecord, result: r, files: files, window: true, cleanup: cleanup}
	}
	class, err := classifyRun(out, runErr, cause, ctx.Err() != nil)
	switch class {
	case runMeasured, runBenchmark, runInvalid, runJobFault:
		// The harness ran to an end of its own here: this host can run it.
		s.w.streaks.Ran(s.runner.Name())
	}
	switch class {
	case runStopped:
		// Hand the job back, record nothing.
		return outcome{act: actHandBack, cleanup: cleanup}
	case runCancelled:
		r := a.newResult(protocol.StatusCancelled, &protocol.ResultError{Class: protocol.ClassCancelled, Message: "run cancelled while the job was running"})
		r.Phases = phases
		return record(r)
	case runMeasured:
		r := a.newResult(protocol.StatusPassed, nil)
		a.fill(r, out, phases)
		a.telemetry(r, telemetry)
		if !r.PCC.Passed {
			r.Status = protocol.StatusFailed
			r.Error = &protocol.ResultError{Class: protocol.ClassBenchmark,
				Message: fmt.Sprintf("PCC %.6f is below the required %.4f", r.PCC.Value, r.PCC.Min)}
		}
		return record(r)
	case runInvalid:
		var inv *device.InvalidError
		errors.As(err, &inv)
		r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassInvalid, Message: inv.Reason})
		r.Phases = phases
		o := record(r)
		o.reason, o.pool = inv.Error(), job.Pool
		return o
	case runBenchmark:
		var bench *device.BenchmarkError
		errors.As(err, &bench)
		r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassBenchmark, Message: bench.Reason})
		a.fill(r, out, phases)
		if bench.PCCRequired > 0 {
			// The harness's own check failed: its figures, not a re-judgement.
			r.PCC = protocol.PCC{Value: bench.PCC, Min: bench.PCCRequired}
		}
		a.telemetry(r, telemetry)
		return record(r)
	case runJobFault:
		// The job's own crash or box limit: the board is blamed only when
		// its check (or the runner's probe) fails now; else the job fails
		// and the board takes the next one with no strike against it.
		var jf *device.JobError
		errors.As(err, &jf)
		probed, berr := s.checkAfterJobFault(ctx)
		if ctx.Err() != nil {
			return outcome{act: actHandBack, cleanup: cleanup}
		}
		if berr == nil {
			what := "the job crashed"
			if jf.Limit != "" {
				what = "the job hit its " + jf.Limit + " limit"
			}
			checked := "its check"
			if probed {
				checked = "its check and the health probe"
			}
			a.log.Warn().Str("reason", jf.Reason).Msg(what + "; the board passed " + checked + " afterwards: the job fails, the board stays in service")
			r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassJob,
				Message: fmt.Sprintf("%s, and the board passed %s afterwards: %s", what, checked, jf.Reason)})
			r.Phases = phases
			o := record(r)
			o.failure = jf // the board's history notes it; no strike (slot.after)
			return o
		}
		a.log.Warn().Err(berr).Str("reason", jf.Reason).Msg("the job ended by itself and the board fails afterwards: the board's fault")
		err = device.Infra("%v; afterwards %v", jf, berr)
	case runStoreDown:
		// The board ran nothing: a setup failure, which slot.after leaves be.
		return outcome{act: actStoreDown, cause: err, failure: &device.InfraError{Err: err, Setup: true}, cleanup: cleanup}
	case runHostFault:
		var host *device.HostError
		errors.As(err, &host)
		o := a.hostFault(ctx, host)
		o.cleanup = cleanup
		return o
	}
	if !device.IsSetup(err) {
		s.w.failed.add(job.ID, s.dev.ID)
	}
	return outcome{act: actRetry, cause: err, delay: s.w.cfg.backoff(a.deliveries), failure: err, cleanup: cleanup}
}

// invalid decides a job that cannot run: a dead letter with the reason,
// plus a failed result when the job's id and run are themselves valid and
// the id is its content's (CheckID: a result is never recorded for an id
// the payload does not own). pool is the subject's.
func (a *attemptState) invalid(pool, reason string) outcome {
	reason = "invalid job: " + strings.TrimPrefix(reason, "invalid job: ")
	if a.job != nil && protocol.ValidID("id", a.job.ID) == nil && protocol.ValidID("run", a.job.Run) == nil && protocol.ValidPool(a.job.Pool) &&
		a.job.CheckID() == nil {
		a.log = a.s.log.With().Str("run", a.job.Run).Str("job", a.job.ID).Int("attempt", a.attempt).Logger()
		if a.job.CreatedAt.IsZero() {
			a.job.CreatedAt = a.started
		}
		r := a.newResult(protocol.StatusFailed, &protocol.ResultError{Class: protocol.ClassInvalid, Message: reason})
		return outcome{act: actRecord, result: r, reason: reason, pool: pool}
	}
	return outcome{act: actTerm, reason: reason, pool: pool}
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
		Worker:    protocol.WorkerRef{ID: s.w.cfg.ID, Host: s.w.host, Version: s.w.cfg.Version, Revision: s.w.cfg.Revision},
		Device:    protocol.DeviceRef{ID: s.dev.ID, Pool: s.dev.Pool, Arch: s.dev.Arch, Chips: s.dev.Chips, Firmware: s.dev.Firmware},
		Benchmark: j.Benchmark, Source: j.Source, Labels: j.Labels,
		PCC: protocol.PCC{Min: j.Limits.PCCMin}, Notes: append([]string(nil), a.notes...),
		Trust: claimedTrust(a.msg),
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
	// The metrics the registry reads from the loop and the report
	// (MetricsFrom leaves out values no run measures: the harness is
	// untrusted).
	if m := protocol.MetricsFrom(protocol.MetricSource{Measurements: out.Measurements, Report: out.Report}); len(m) > 0 {
		r.Metrics = m
	}
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

// truncate cuts s to at most n bytes, on a rune boundary: the cut never
// leaves half a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
