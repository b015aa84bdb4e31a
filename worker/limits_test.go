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

// On a default nats-server (1 MB max payload) a 900 KB job, far over the
// job size limit, is dead-lettered within a minute (the dead letter keeps
// a prefix and the digest of the payload, not all of it) and leaves
// BENCH_JOBS; it is not handed back forever.
func TestOversizeJobDeadLetteredOnDefaultServer(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	nc, _ := fleettest.Connect(t, f.url)
	if mp := nc.MaxPayload(); mp != 1<<20 {
		t.Fatalf("the test server's max payload is %d, want the nats-server default 1 MB", mp)
	}
	cfg := f.workerConfig(t, "big-w", 1)
	cfg.MaxDeliver = 2
	fleettest.StartWorker(t, cfg)

	j := fleettest.SimJobs(t, "big-1", 1, nil)[0]
	j.CreatedAt = time.Now().UTC()
	j.Source.Repo = strings.Repeat("r", 900<<10)
	j.ID = protocol.JobID(j.Run, j.Cell())
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(protocol.JobSubject("sim", protocol.PriorityNormal))
	m.Data = data
	if _, err := f.js.PublishMsg(t.Context(), m); err != nil {
		t.Fatalf("publish a %d byte job: %v", len(data), err)
	}
	fleettest.Eventually(t, time.Minute, "the 900 KB job's dead letter", func() bool {
		info, err := f.topo.Dead.Info(t.Context())
		return err == nil && info.State.Msgs >= 1
	})
	entries := f.dlqList(t)
	if e := entries[0]; !strings.Contains(e.Reason, "payload") || !strings.Contains(e.Reason, "sha256") {
		t.Errorf("reason %q does not say the payload was too big and how to recognise it", e.Reason)
	}
	fleettest.Eventually(t, 10*time.Second, "BENCH_JOBS empty", func() bool {
		info, err := f.topo.Jobs.Info(t.Context())
		p, a := f.consumerPending(t, "sim", protocol.PriorityNormal)
		return err == nil && info.State.Msgs == 0 && p == 0 && a == 0
	})
}

// A job whose dead letter cannot be stored (BENCH_DEAD refuses it) is handed back
// only until it has used its deliveries: MaxDeliver holds on the hand-back
// path too, so it is not delivered forever.
func TestHandBackStopsAtMaxDeliver(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "hb-w", 1)
	cfg.MaxDeliver = 3
	fleettest.StartWorker(t, cfg)
	// BENCH_DEAD refuses every dead letter from now on.
	dead := f.topo.Dead.CachedInfo().Config
	dead.MaxMsgSize = 16
	if _, err := f.js.UpdateStream(t.Context(), dead); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(protocol.JobSubject("sim", protocol.PriorityNormal))
	m.Data = []byte(`{"not":"a job"}`)
	if _, err := f.js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "the job to leave BENCH_JOBS", func() bool {
		info, err := f.topo.Jobs.Info(t.Context())
		return err == nil && info.State.Msgs == 0
	})
	c, err := f.js.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName("sim", protocol.PriorityNormal))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer > uint64(cfg.MaxDeliver)+1 {
		t.Errorf("delivered %d times with MaxDeliver %d", info.Delivered.Consumer, cfg.MaxDeliver)
	}
}

// A job cannot hold a board longer than the worker allows by asking for a
// long limits.timeout: its attempt ends at the worker's
// MaxJobTimeout, and the dead letter says so.
func TestJobTimeoutIsBoundedByTheWorker(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "cap-w", 1)
	cfg.MaxDeliver = 1
	cfg.JobTimeout, cfg.MaxJobTimeout = 200*time.Millisecond, 500*time.Millisecond
	fleettest.StartWorker(t, cfg)
	j := fleettest.SimJobs(t, "cap-1", 1, map[string]string{"sim.duration": "5m"})[0]
	j.Limits.Timeout = protocol.Duration(47 * time.Hour)
	j.ID = protocol.JobID(j.Run, j.Cell())
	fleettest.Submit(t, f.js, f.topo, f.store, "cap-1", protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, time.Minute, "the job's dead letter", func() bool {
		info, err := f.topo.Dead.Info(t.Context())
		return err == nil && info.State.Msgs >= 1
	})
	if e := f.dlqList(t)[0]; !strings.Contains(e.Reason, "timed out after 500ms") {
		t.Fatalf("dead letter %q: want the attempt cut at the worker's 500ms, not the job's 47h", e.Reason)
	}
}

// A job cannot lift the worker's cap on iterations: one asking
// for more is invalid on the worker, after one attempt.
func TestLoopCountIsBoundedByTheWorker(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	cfg := f.workerConfig(t, "loops-w", 1)
	cfg.MaxLoopCount = 50
	fleettest.StartWorker(t, cfg)
	j := fleettest.SimJobs(t, "loops-1", 1, nil)[0]
	j.Benchmark.LoopCount, j.Benchmark.WarmupCount = 100, 1
	j.ID = protocol.JobID(j.Run, j.Cell())
	fleettest.Submit(t, f.js, f.topo, f.store, "loops-1", protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, time.Minute, "the job's result", func() bool {
		return len(fleettest.Results(t, f.store, "loops-1")) == 1
	})
	r := fleettest.Results(t, f.store, "loops-1")[j.ID]
	if r.Status != protocol.StatusFailed || r.Error == nil || r.Error.Class != protocol.ClassInvalid || !strings.Contains(r.Error.Message, "at most 50 iterations") {
		t.Fatalf("%s %+v, want invalid: more iterations than the worker runs", r.Status, r.Error)
	}
}
