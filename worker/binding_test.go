package worker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// A job published with the run and id of another queued job but other
// content (a producer may publish on bench.jobs.>) is dead-lettered with a
// reason naming the id and records no result; the real job then runs and
// its result is the real job's.
func TestForgedJobIDIsDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	const run = "bind-1"
	real := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})[0]
	real.CreatedAt = time.Now().UTC()
	forged := *real
	forged.Benchmark.Model = "forgednet"
	forged.Labels = map[string]string{"sim.duration": "10ms", "sim.samples_per_sec": "999999"}
	data, err := json.Marshal(&forged)
	if err != nil {
		t.Fatal(err)
	}
	// The forgery goes first (and without a message id, so the real job is
	// not deduplicated away).
	m := nats.NewMsg(protocol.JobSubject("sim", protocol.PriorityNormal))
	m.Data = data
	if _, err := f.js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{real})
	fleettest.StartWorker(t, f.workerConfig(t, "bind-w", 1))

	fleettest.Eventually(t, 20*time.Second, "the real job's result", func() bool {
		return fleettest.Results(t, f.store, run)[real.ID] != nil
	})
	r := fleettest.Results(t, f.store, run)[real.ID]
	if r.Benchmark.Model != real.Benchmark.Model || r.Measurements.SamplesPerSec == 999999 {
		t.Fatalf("the result of %s is the forged job's: model %q, %v samples/s", real.ID, r.Benchmark.Model, r.Measurements.SamplesPerSec)
	}
	var entries []dlqEntry
	fleettest.Eventually(t, 10*time.Second, "the forged job's dead letter", func() bool {
		entries = f.dlqList(t)
		return len(entries) == 1
	})
	if e := entries[0]; !strings.Contains(e.Reason, "id") || !strings.Contains(e.Reason, "content") {
		t.Errorf("dead letter reason %q does not say the id is not the content's", e.Reason)
	}
}
