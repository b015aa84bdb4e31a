package runstate

// Run states shown by `runs list`.
const (
	RunQueued    = "queued"    // no job started yet
	RunRunning   = "running"   // some job started, some job or repeat not ended
	RunPassed    = "passed"    // every job passed
	RunFailed    = "failed"    // every job ended, some did not pass
	RunCancelled = "cancelled" // cancelled, and every job has ended
	// RunCancelling: cancelled, but a job has not ended yet (one being
	// stopped, or queued where the canceller could not remove it: the
	// worker that claims it drops it).
	RunCancelling = "cancelling"
)

// RunState is the state of a run from its progress and its cancel flag.
func RunState(p Progress, cancelled bool) string {
	c := p.All
	switch {
	case cancelled && !p.Ended():
		return RunCancelling
	case cancelled:
		return RunCancelled
	case c.Total > 0 && c.Done() == c.Total && !p.Ended():
		return RunRunning // confirming: a repeat has not ended
	case c.Total > 0 && c.Done() == c.Total && c.Passed == c.Total:
		return RunPassed
	case c.Total > 0 && c.Done() == c.Total:
		return RunFailed
	case c.Running > 0 || c.Recording > 0 || c.Spooled > 0 || c.Done() > 0:
		return RunRunning
	default:
		return RunQueued
	}
}
