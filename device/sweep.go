package device

import "context"

// Sweeper is a runner that cleans up after a worker that died while its
// jobs ran (SIGKILL, a crash): it kills every process those jobs left,
// and removes their rooms and cgroups, so that none of them holds a
// board or a disk when the worker claims again. The worker calls it once
// at start, before any slot claims a job. It never touches the jobs of
// a worker that is alive.
type Sweeper interface {
	// Sweep cleans up and says what it found ("" when nothing); err names
	// what could not be cleaned.
	Sweep(ctx context.Context) (found string, err error)
}
