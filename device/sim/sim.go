// Package sim is a synthetic runner for load and fault tests. It does no
// real work: it sleeps through the phases and injects the fault its job's
// labels ask for.
//
// Labels:
//
//	sim.duration       Go duration of the whole job (default 50ms)
//	sim.fail           none | transient | permanent | hang | crash | pcc
//	sim.fail_attempts  fail only the first N attempts (default: every attempt)
//	sim.pcc            the PCC value to report (default 0.999)
//	sim.samples_per_sec  the throughput to report: the timed loop's synthetic
//	                   iteration times become batch/rate ± 0.1% jitter (the
//	                   wall-clock phases still follow sim.duration)
//
// The attempt number comes from the worker through device.WithAttempt.
package sim

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// Label names the sim runner reads.
const (
	LabelDuration      = "sim.duration"
	LabelFail          = "sim.fail"
	LabelFailAttempts  = "sim.fail_attempts"
	LabelPCC           = "sim.pcc"
	LabelSamplesPerSec = "sim.samples_per_sec"
)

// Fault kinds for LabelFail.
const (
	FailNone      = "none"
	FailTransient = "transient"
	FailPermanent = "permanent"
	FailHang      = "hang"
	FailCrash     = "crash"
	FailPCC       = "pcc"
)

// Runner is the sim runner.
type Runner struct{}

// New returns a sim runner.
func New() *Runner { return &Runner{} }

// Name implements device.Runner.
func (*Runner) Name() string { return protocol.RunnerSim }

type params struct {
	duration     time.Duration
	fail         string
	failAttempts int
	pcc          float64
	rate         float64 // samples/sec to report; 0 = derived from duration
}

func parse(labels map[string]string) (params, error) {
	p := params{duration: 50 * time.Millisecond, fail: FailNone, pcc: 0.999}
	if v, ok := labels[LabelDuration]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > 24*time.Hour {
			return p, device.Invalid("label %s: %q is not a duration between 0 and 24h", LabelDuration, v)
		}
		p.duration = d
	}
	if v, ok := labels[LabelFail]; ok {
		switch v {
		case FailNone, FailTransient, FailPermanent, FailHang, FailCrash, FailPCC:
			p.fail = v
		default:
			return p, device.Invalid("label %s: %q is not one of none, transient, permanent, hang, crash, pcc", LabelFail, v)
		}
	}
	if v, ok := labels[LabelFailAttempts]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, device.Invalid("label %s: %q is not a non-negative integer", LabelFailAttempts, v)
		}
		p.failAttempts = n
	}
	if v, ok := labels[LabelPCC]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < -1 || f > 1 {
			return p, device.Invalid("label %s: %q is not a number in [-1, 1]", LabelPCC, v)
		}
		p.pcc = f
	}
	if v, ok := labels[LabelSamplesPerSec]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || f > 1e9 {
			return p, device.Invalid("label %s: %q is not a number above 0 and at most 1e9", LabelSamplesPerSec, v)
		}
		p.rate = f
	}
	return p, nil
}

// Check implements device.Runner. Any model name is accepted.
func (*Runner) Check(b protocol.Benchmark) error { return nil }

// Run implements device.Runner.
func (r *Runner) Run(ctx context.Context, job *protocol.Job, dev device.Device, rec device.Recorder) (*device.Outcome, error) {
	p, err := parse(labelsOf(job))
	if err != nil {
		return nil, err
	}
	attempt := device.AttemptFrom(ctx)
	failing := p.fail != FailNone && (p.failAttempts == 0 || attempt <= p.failAttempts)
	if failing && p.fail == FailPermanent {
		return nil, device.Invalid("sim: permanent failure injected")
	}
	// Each phase sleeps until its deadline from the start, so a late timer
	// (a loaded host) does not add up over the phases: the job lasts
	// sim.duration plus at most one timer's lateness.
	begin := time.Now()
	rec.Phase(device.PhaseCompile)
	rec.Log(fmt.Sprintf("sim: compiling %s on %s (attempt %d)", job.Benchmark.Model, dev.ID, attempt))
	if err := sleepUntil(ctx, begin.Add(p.duration/5)); err != nil {
		return nil, err
	}
	if failing {
		switch p.fail {
		case FailTransient:
			return nil, device.Infra("sim: transient failure injected")
		case FailCrash:
			return nil, device.Infra("sim: runner crashed (injected)")
		case FailHang:
			rec.Log("sim: hanging (injected)")
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	rec.Phase(device.PhaseWarmup)
	if err := sleepUntil(ctx, begin.Add(p.duration*2/5)); err != nil {
		return nil, err
	}
	rec.Phase(device.PhaseTiming)
	loop := job.Benchmark.LoopCount
	per := (p.duration * 3 / 5) / time.Duration(max(loop, 1))
	jitter := 0.1 // ±5%
	if p.rate > 0 {
		// The iteration time that makes batch/iteration = rate, ±0.1%.
		per = time.Duration(float64(max(job.Benchmark.BatchSize, 1)) / p.rate * float64(time.Second))
		jitter = 0.002
	}
	iters := make([]time.Duration, 0, min(loop, 1<<16))
	for i := 0; i < loop && i < 1<<16; i++ {
		// Synthetic timing: the iteration time with jitter.
		iters = append(iters, per+time.Duration(float64(per)*(rand.Float64()-0.5)*jitter))
	}
	if err := sleepUntil(ctx, begin.Add(p.duration)); err != nil {
		return nil, err
	}
	rec.Phase(device.PhasePCC)
	pcc := p.pcc
	if required := cmp.Or(job.Limits.PCCMin, protocol.DefaultPCCMin); failing && p.fail == FailPCC && pcc >= required {
		pcc = required / 2
	}
	return &device.Outcome{Measurements: device.Measure(job.Benchmark.BatchSize, iters), PCCValue: pcc}, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	return sleep(ctx, time.Until(t))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func init() {
	device.Register(device.Kind{
		Name: protocol.RunnerSim, Builtin: true, Summary: "synthetic runner with injected faults (labels sim.*)",
		Check: (*Runner)(nil).Check,
		New: func(device.Settings, zerolog.Logger) (device.Runner, error) {
			return New(), nil
		},
	})
}
