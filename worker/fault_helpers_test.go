package worker_test

// Helpers shared by the hang, cancel, drain and bad-input tests.

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

// faultFleet is one embedded server, a file store and a client, with the
// topology created.
type faultFleet struct {
	url   string
	store storage.Bucket
	js    jetstream.JetStream
	topo  *topology.Handles
	tc    topology.Config
}

func newFaultFleet(t *testing.T) *faultFleet { return newFaultFleetAckWait(t, 3*time.Second) }

func newFaultFleetAckWait(t *testing.T, ackWait time.Duration) *faultFleet {
	t.Helper()
	srv := testfleet.Server(t)
	f := &faultFleet{url: srv.ClientURL(), store: newStore(t), tc: topology.Config{AckWait: ackWait}}
	_, f.js = testfleet.Connect(t, f.url)
	f.topo = testfleet.Topology(t, f.js, f.tc)
	return f
}

// workerConfig is a worker with n sim slots named id-0..., fast retries.
func (f *faultFleet) workerConfig(t *testing.T, id string, n int) worker.Config {
	t.Helper()
	nc, _ := testfleet.Connect(t, f.url)
	return worker.Config{ID: id, Conn: nc, Store: f.store, AckWait: f.tc.AckWait, Slots: testfleet.SimSlots(id, n),
		Backoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, IdlePoll: 100 * time.Millisecond,
		Log: zerolog.Nop()}
}

// events reads every event of run so far.
func (f *faultFleet) events(t *testing.T, run string) []protocol.Event {
	t.Helper()
	return runEvents(t, f.js, run)
}

// runEvents reads every event of run so far from BENCH_EVENTS.
func runEvents(t *testing.T, js jetstream.JetStream, run string) []protocol.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, protocol.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{protocol.RunEventsFilter(run)}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Event
	for pending := info.NumPending; pending > 0; {
		batch, err := cons.Fetch(int(min(pending, 500)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			e, err := protocol.DecodeEvent(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, *e)
			if meta, err := m.Metadata(); err == nil {
				pending = meta.NumPending
			}
		}
		if n == 0 {
			break
		}
	}
	return out
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

// cliRun runs the real command line in process against the fleet's server.
func (f *faultFleet) cliRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"--nats", f.url, "--log-format", "json", "--log-level", "warn"}, args...)
	code = cli.Run(ctx, full, &out, &errb)
	return code, out.String(), errb.String()
}

// dlqEntry is the JSON shape of `dlq list --format json` (DESIGN §7).
type dlqEntry struct {
	ID       string          `json:"id"`
	Pool     string          `json:"pool"`
	Reason   string          `json:"reason"`
	Attempts int             `json:"attempts"`
	Time     time.Time       `json:"time"`
	Payload  json.RawMessage `json:"payload"`
}

// dlqList runs `benchfleet dlq list --format json` and checks its shape:
// exactly the documented keys (docs/OPERATIONS.md).
func (f *faultFleet) dlqList(t *testing.T) []dlqEntry {
	t.Helper()
	code, out, errOut := f.cliRun(t, "dlq", "list", "--format", "json")
	if code != 0 {
		t.Fatalf("dlq list: exit %d: %s", code, errOut)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("dlq list output is not a JSON array: %v\n%s", err, out)
	}
	for _, m := range raw {
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		for _, k := range []string{"id", "run", "pool", "priority", "worker", "reason", "attempts", "time", "payload"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("dlq entry lacks %q: has %v", k, keys)
			}
		}
		if len(m) != 9 {
			t.Fatalf("dlq entry has extra keys: %v", keys)
		}
	}
	var entries []dlqEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatal(err)
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
	c, err := f.js.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName(pool, prio))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.NumPending, info.NumAckPending
}
