package device

import (
	"errors"
	"fmt"
)

// The limits of a job's box a *JobError can name (JobError.Limit).
const (
	// LimitPids: the job hit its box's task limit (pids.max), e.g. a fork
	// bomb.
	LimitPids = "pids"
	// LimitMemory: the job hit its box's memory limit (memory.max) or was
	// killed by the OOM killer inside its box.
	LimitMemory = "memory"
	// LimitDisk: the job filled its room (the bound on its working
	// directory and TMPDIR).
	LimitDisk = "disk"
)

// JobError: the job brought about its own end. Its harness crashed (an
// exit code the harness never gives, or a signal that is not the
// upstream watchdog's) or the job hit a limit of its box (Limit). It is
// the job's fault, not the board's, unless the board says otherwise:
//
//   - the worker checks the board (Health.Check) and, when the runner is a
//     Prober with a probe configured, runs the probe on it;
//   - when both pass, the job ends with a failed result (class "job",
//     Reason as its message), is not retried, and the board stays in
//     service with no strike against it (no reset, no step towards a
//     quarantine);
//   - when either fails, the board is at fault after all: the failure is
//     an infrastructure failure like any *InfraError (reset, re-check,
//     redelivery, quarantine of a board that stays bad).
//
// A runner returns it only for a run that ended by itself: a run stopped
// by its context (timeout, cancel) returns the context's error, and a
// hang (the upstream watchdog's SIGABRT) is an *InfraError with Hang.
type JobError struct {
	// Limit is the box limit the job hit (LimitPids, LimitMemory,
	// LimitDisk), "" for a crash of the job's own processes.
	Limit string
	// Reason says what happened, for the result's message.
	Reason string
}

func (e *JobError) Error() string {
	if e.Limit != "" {
		return fmt.Sprintf("the job hit its %s limit: %s", e.Limit, e.Reason)
	}
	return "the job crashed: " + e.Reason
}

// JobFault returns a *JobError for limit ("" for a crash).
func JobFault(limit, format string, args ...any) error {
	return &JobError{Limit: limit, Reason: fmt.Sprintf(format, args...)}
}

// IsJobFault reports whether err is a *JobError.
func IsJobFault(err error) bool {
	var e *JobError
	return errors.As(err, &e)
}
