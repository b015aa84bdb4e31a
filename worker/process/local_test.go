package process_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/process"
)

// A local fleet runs a job on its own server and store; a second one on
// the same data directory is refused while the first runs, and starts
// once it has stopped.
func TestStartLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := process.LocalOptions{DataDir: dir, Command: "test", Options: process.Options{Slots: "sim=1",
		Worker: worker.Config{ID: "local", AckWait: 5 * time.Second, IdlePoll: 100 * time.Millisecond}}}
	l, err := process.StartLocal(t.Context(), o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Kill)
	_, js := fleettest.Connect(t, l.URL)
	topo := fleettest.Topology(t, js, topology.Config{})
	fleettest.Submit(t, js, topo, l.Store(), "local-run", protocol.PriorityNormal, fleettest.SimJobs(t, "local-run", 1, nil))
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool { return len(fleettest.Results(t, l.Store(), "local-run")) == 1 })

	_, err = process.StartLocal(t.Context(), o, zerolog.Nop())
	var oe *process.OptionError
	if !errors.As(err, &oe) || oe.Option != "--data" {
		t.Fatalf("a second local fleet on %s: %v, want an OptionError naming --data", dir, err)
	}
	if err := l.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	again, err := process.StartLocal(t.Context(), o, zerolog.Nop())
	if err != nil {
		t.Fatalf("restart on the released data directory: %v", err)
	}
	again.Kill()
}
