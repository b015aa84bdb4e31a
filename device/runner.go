// Package device is benchfleet's device layer: the devices a host serves
// (discovered Tenstorrent boards and built-in cpu/sim slots), their health,
// and the Runner interface that runs one job on one device. Runners live in
// sub-packages and register their kinds (Register): device/cpu (built-in
// reference engine), device/harness (the upstream pytest harnesses:
// tt-forge-onnx and tt-xla) and device/sim (synthetic, for load and faults).
package device

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchfleet/benchfleet/protocol"
)

// Phase names, in the order a run goes through them.
const (
	PhaseCompile = "compile"
	PhaseWarmup  = "warmup"
	PhaseTiming  = "timing"
	PhasePCC     = "pcc"
	PhaseUpload  = "upload"
)

// Runner runs one job on one device.
//
// Run must honour ctx: when it is cancelled (timeout, run cancelled, worker
// stopping) Run stops promptly and returns ctx's error, killing any process
// group it started. Run reports phases, log lines and artifact files through
// rec as it goes.
//
// Errors are typed so the worker can dispatch on them with errors.As:
// *InvalidError (the job cannot be run: no retry, dead letter),
// *BenchmarkError (the benchmark ran and failed: a failed result, no retry),
// *JobError (the job crashed or hit a limit of its box: a failed result,
// no retry, no blame on the board unless its check or probe fails after),
// *HostError (the host cannot run the harness), anything else is an
// infrastructure failure (reset, health check, retry).
type Runner interface {
	// Name is the runner name jobs ask for (protocol.Runner*).
	Name() string
	// Check validates the parts of a job only the runner knows (models,
	// input sizes). It returns an *InvalidError or nil.
	Check(b protocol.Benchmark) error
	// Run runs the job on dev.
	Run(ctx context.Context, job *protocol.Job, dev Device, rec Recorder) (*Outcome, error)
}

// Recorder receives what a runner reports while it runs. Implementations
// are safe for concurrent use.
type Recorder interface {
	// Phase marks the start of a phase (the previous one ends).
	Phase(name string)
	// Log records one line of the job's log.
	Log(line string)
	// Artifact registers a file to upload beside the result under name (a
	// plain file name). The file must stay in place until Run returns.
	Artifact(name, path string)
}

// Outcome is what a finished run measured.
type Outcome struct {
	Measurements protocol.Measurements
	// PCCValue is the accuracy check's correlation.
	PCCValue float64
	// PCCJudged is set by a runner whose harness judged its own accuracy
	// check and passed it (an upstream harness exits 0 only then): unless
	// the job sets limits.pcc_min, the result passes by that judgement.
	// Unset, the worker judges PCCValue against the job's limits.pcc_min
	// or protocol.DefaultPCCMin.
	PCCJudged bool
	// PCCRequired is the PCC the harness required, when it said (tt-xla
	// prints it); 0 when unknown.
	PCCRequired float64
	// Notes qualify the figures (Result.Notes), e.g. a batch size the
	// harness chose itself.
	Notes []string
	// Upstream names the artifact holding the raw upstream report, if any.
	Upstream string
	// Device facts learned during the run (e.g. from the upstream report).
	Arch     string
	Firmware string
	// Phases, when set, override the recorder's wall-clock phase timings
	// with the runner's own (e.g. compile time parsed from a log).
	Phases *protocol.Phases
	// Report holds the upstream report's facts, if the runner has one.
	Report *protocol.UpstreamReport
}

// Prober is a runner that can confirm a host fault (a *HostError of one
// job) with a known-good job of the operator's before the host leaves
// service: the job under test may only claim its host is broken.
type Prober interface {
	// Probe runs the probe on dev. configured is false when the runner
	// has no probe; err is nil when the probe passed.
	Probe(ctx context.Context, dev Device) (configured bool, err error)
}

// InvalidError: the job cannot run on this runner (unknown model, bad
// option, harness usage error). No retry; the job is dead-lettered.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "invalid job: " + e.Reason }

// Invalid returns an *InvalidError.
func Invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// BenchmarkError: the benchmark ran and failed (PCC below threshold, test
// failure). The job ends with a failed result; no retry.
type BenchmarkError struct {
	Reason string
	// PCC and PCCRequired are the failed accuracy check's figures, when
	// the harness printed them (0 otherwise).
	PCC, PCCRequired float64
}

func (e *BenchmarkError) Error() string { return "benchmark failed: " + e.Reason }

// Failed returns a *BenchmarkError.
func Failed(format string, args ...any) error {
	return &BenchmarkError{Reason: fmt.Sprintf(format, args...)}
}

// InfraError marks an infrastructure failure explicitly (hang, crash,
// device gone). Untyped errors are treated the same way.
type InfraError struct {
	Err error
	// Hang is set when the failure looks like the board hung (a watchdog
	// signal, no progress): the worker resets the board before its next
	// job even when a health check still lists it.
	Hang bool
	// Setup is set when the job's build could not be made (the store
	// failed to serve a wheel, the job's time ran out while it was made):
	// the board never ran the job, so it is neither checked nor blamed.
	Setup bool
}

// SetupFailed returns an *InfraError with Setup set.
func SetupFailed(format string, args ...any) error {
	return &InfraError{Err: fmt.Errorf(format, args...), Setup: true}
}

// IsSetup reports whether err is an *InfraError of a build's setup.
func IsSetup(err error) bool {
	var e *InfraError
	return errors.As(err, &e) && e.Setup
}

func (e *InfraError) Error() string { return "infrastructure: " + e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// Infra wraps err as an *InfraError.
func Infra(format string, args ...any) error {
	return &InfraError{Err: fmt.Errorf(format, args...)}
}

// Hang returns an *InfraError with Hang set.
func Hang(format string, args ...any) error {
	return &InfraError{Err: fmt.Errorf(format, args...), Hang: true}
}

// IsHang reports whether err is an *InfraError marking a hang.
func IsHang(err error) bool {
	var e *InfraError
	return errors.As(err, &e) && e.Hang
}

// HostError: the runner cannot run any job on this host (the harness's
// environment is broken: a conftest that cannot be imported, a missing
// wheel or driver library). It is not the job's fault and not the board's:
// the worker takes every slot of that runner out of service with Reason and
// hands the job back for another host.
type HostError struct {
	Reason string
	// Found is set when the worker's own code found the fault (its build
	// cache's disk is full, its mirror broken), not the job under test:
	// no probe is needed to believe it.
	Found bool
}

func (e *HostError) Error() string { return "host cannot run the harness: " + e.Reason }

// HostFault returns a *HostError.
func HostFault(format string, args ...any) error {
	return &HostError{Reason: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is an *InvalidError.
func IsInvalid(err error) bool {
	var e *InvalidError
	return errors.As(err, &e)
}

// IsBenchmark reports whether err is a *BenchmarkError.
func IsBenchmark(err error) bool {
	var e *BenchmarkError
	return errors.As(err, &e)
}
