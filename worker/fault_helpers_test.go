package worker_test

// Helpers shared by the hang, cancel, drain and bad-input tests.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// faultFleet is fleettest's fleet under the short names these tests use.
type faultFleet struct {
	*fleettest.Fleet
	url   string
	store storage.Bucket
	js    jetstream.JetStream
	topo  *topology.Handles
	tc    topology.Config
}

func newFaultFleet(t *testing.T) *faultFleet { return newFaultFleetAckWait(t, 3*time.Second) }

func newFaultFleetAckWait(t *testing.T, ackWait time.Duration) *faultFleet {
	t.Helper()
	f := fleettest.New(t, fleettest.Options{AckWait: ackWait})
	return &faultFleet{Fleet: f, url: f.URL, store: f.Store, js: f.JS, topo: f.Topo, tc: f.Topology}
}

// workerConfig is a worker with n sim slots named id-0..., fast retries.
func (f *faultFleet) workerConfig(t *testing.T, id string, n int) worker.Config {
	t.Helper()
	return f.WorkerConfig(t, id, fleettest.SimSlots(id, n))
}

// events reads every event of run so far.
func (f *faultFleet) events(t *testing.T, run string) []protocol.Event {
	t.Helper()
	return f.Events(t, run)
}

// runEvents reads every event of run so far from BENCH_EVENTS.
func runEvents(t *testing.T, js jetstream.JetStream, run string) []protocol.Event {
	t.Helper()
	return fleettest.Events(t, js, run)
}

// eventsOf filters events of job by kind.
func eventsOf(evs []protocol.Event, job string, kind protocol.EventKind) []protocol.Event {
	var out []protocol.Event
	for _, e := range evs {
		if e.Job == job && e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// dlqEntry is one dead letter as `benchfleet dlq list` shows it.
type dlqEntry = fleet.DeadEntry

// dlqList reads every dead letter (fleet.ReadDead, what `dlq list`
// prints; the CLI's tests check the JSON shape).
func (f *faultFleet) dlqList(t *testing.T) []dlqEntry {
	t.Helper()
	entries, err := fleet.ReadDead(t.Context(), f.js)
	if err != nil {
		t.Fatalf("read dead letters: %v", err)
	}
	return entries
}

// payloadBytes is the original message of a dead letter: the JSON value
// itself, or the string it was shown as.
func payloadBytes(t *testing.T, p json.RawMessage) []byte {
	t.Helper()
	if strings.HasPrefix(string(p), `"`) {
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	return p
}

// consumerPending is the number of queued, unclaimed jobs of pool at prio.
func (f *faultFleet) consumerPending(t *testing.T, pool string, prio protocol.Priority) (pending uint64, ackPending int) {
	t.Helper()
	return f.Pending(t, pool, prio)
}
