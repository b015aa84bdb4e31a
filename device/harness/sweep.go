package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
)

// Sweep implements device.Sweeper: the rooms under Config.TempDir whose
// worker died with their jobs running are cleaned up (box.Box.Sweep):
// their processes killed, their cgroups removed, their tmpfs unmounted.
func (r *Runner) Sweep(context.Context) (string, error) {
	rep, err := r.box.Sweep()
	if err != nil {
		err = fmt.Errorf("%s: %w", r.Name(), err)
	}
	if !rep.Found() {
		return "", err
	}
	return fmt.Sprintf("%s in %s", rep, r.cfg.TempDir), err
}

// busyWait bounds how long a job waits for its board to be let go (a
// health check's tt-smi of another slot, a process dying) before the
// board is found busy.
const busyWait = 10 * time.Second

// boardFree returns nil when no other process holds dev's device nodes
// open. While one does, it looks again until busyWait has passed, then
// says the board is busy: the board's or the host's fault, never the
// job's (an infrastructure failure: the worker checks the board and
// retries the job, on another board when it can).
func (r *Runner) boardFree(ctx context.Context, dev device.Device) error {
	nodes := deviceNodes(dev)
	deadline := time.Now().Add(busyWait)
	for {
		holders, err := box.Holders(nodes)
		if err != nil || len(holders) == 0 {
			return nil // unknown is not busy: the job runs
		}
		if time.Now().After(deadline) {
			return device.Infra("%s: board %s busy before the job started: %s (not a job of this worker: the job is handed back)",
				r.Name(), dev.ID, holdersText(holders))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not started: %w", r.Name(), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// busyAfter turns a job's failure into the board's when another process
// holds the board now: it was busy, and the job could not have run right.
func busyAfter(name string, dev device.Device, err error) error {
	var bench *device.BenchmarkError
	var job *device.JobError
	if !errors.As(err, &bench) && !errors.As(err, &job) {
		return err
	}
	holders, herr := box.Holders(deviceNodes(dev))
	if herr != nil || len(holders) == 0 {
		return err
	}
	return device.Infra("%s: board %s busy: %s (%v)", name, dev.ID, holdersText(holders), err)
}

func holdersText(hs []box.Holder) string {
	parts := make([]string, 0, len(hs))
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("pid %d (%s) holds %s open", h.PID, h.Comm, h.Path))
	}
	return strings.Join(parts, ", ")
}
