package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// appliedServer is accountsServer with the topology applied by the admin.
func appliedServer(t *testing.T) string {
	t.Helper()
	url := accountsServer(t)
	_, jsA, _ := as(t, url, "admin")
	if _, err := topology.Apply(t.Context(), jsA, topology.Config{AckWait: 5 * time.Second}); err != nil {
		t.Fatalf("topology apply as admin: %v", err)
	}
	return url
}

// openAs opens the applied topology as user.
func openAs(t *testing.T, url, user string) (*nats.Conn, jetstream.JetStream, *topology.Handles, *logBuffer) {
	t.Helper()
	nc, js, log := as(t, url, user)
	h, err := topology.Open(t.Context(), js)
	if err != nil {
		t.Fatalf("open the topology as %s: %v\n%s", user, err, log.String())
	}
	return nc, js, h, log
}

// A producer's put with `Nats-Rollup: all` on
// bench-runs (a worker's on bench-health) is refused and leaves every key.
func TestRollupLeavesBucketsWhole(t *testing.T) {
	url := appliedServer(t)
	_, jsP, topoP, _ := openAs(t, url, "producer")
	_, jsW, topoW, _ := openAs(t, url, "worker")
	runKeys := []string{protocol.ManifestKey("keep-1"), protocol.CancelKey("keep-1"), protocol.ManifestKey("keep-2")}
	for _, k := range runKeys {
		if _, err := topoP.Runs.Put(t.Context(), k, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	healthKey := protocol.HealthKey("w1", "tt0")
	if _, err := topoW.Health.Put(t.Context(), healthKey, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		js      jetstream.JetStream
		subject string
	}{{jsP, "$KV." + protocol.BucketRuns + ".x"}, {jsW, "$KV." + protocol.BucketHealth + ".x"}} {
		m := nats.NewMsg(c.subject)
		m.Data = []byte("wipe")
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
		if _, err := c.js.PublishMsg(shortCtx(t), m); err == nil {
			t.Errorf("a roll-up on %s was accepted", c.subject)
		}
	}
	for _, k := range runKeys {
		if _, err := topoP.Runs.Get(t.Context(), k); err != nil {
			t.Errorf("bench-runs %s after the roll-up: %v", k, err)
		}
	}
	if _, err := topoW.Health.Get(t.Context(), healthKey); err != nil {
		t.Errorf("bench-health %s after the roll-up: %v", healthKey, err)
	}
}

// Garbage published first under a future job's
// Nats-Msg-Id makes the real submit fail, naming the job: in BENCH_JOBS
// (another producer squats) and in BENCH_UNTRUSTED (the untrusted user
// squats an untrusted run's job; it can no longer publish to BENCH_JOBS).
func TestSquattedJobIDFailsSubmit(t *testing.T) {
	url := appliedServer(t)
	_, jsP, topoP, _ := openAs(t, url, "producer")
	_, jsP2, _, _ := openAs(t, url, "producer")
	_, jsU, topoU, _ := openAs(t, url, "untrusted")
	for _, c := range []struct {
		run      string
		squatter jetstream.JetStream
		sub      *submit.Submitter
	}{
		{"squat-1", jsP2, &submit.Submitter{JS: jsP, Runs: topoP.Runs, Jobs: topoP.Jobs, Log: zerolog.Nop()}},
		{protocol.UntrustedRunPrefix + "squat-1", jsU, &submit.Submitter{JS: jsU, Runs: topoU.Runs, Untrusted: topoU.Untrusted, Log: zerolog.Nop()}},
	} {
		jobs := fleettest.SimJobs(t, c.run, 2, nil)
		m := nats.NewMsg(protocol.QueueOf(c.run, "sim", protocol.PriorityNormal).Subject())
		m.Data = []byte(`{"garbage":true}`)
		m.Header.Set(jetstream.MsgIDHeader, jobs[1].ID)
		if _, err := c.squatter.PublishMsg(t.Context(), m); err != nil {
			t.Fatalf("%s: the squatting publish: %v", c.run, err)
		}
		_, err := c.sub.Submit(t.Context(), submit.Submission{Run: c.run, Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
		if err == nil || !errors.Is(err, submit.ErrSquatted) || !strings.Contains(err.Error(), jobs[1].ID) {
			t.Fatalf("%s: submit over a squatted id: %v, want an error naming job %s", c.run, err, jobs[1].ID)
		}
	}
	sub := &submit.Submitter{JS: jsP, Runs: topoP.Runs, Jobs: topoP.Jobs, Log: zerolog.Nop()}
	// The same run submitted again by its producer within the duplicate
	// window (a retry) is not squatting.
	const run2 = "squat-2"
	jobs2 := fleettest.SimJobs(t, run2, 2, nil)
	for range 2 {
		if _, err := sub.Submit(t.Context(), submit.Submission{Run: run2, Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs2}); err != nil {
			t.Fatalf("submit: %v", err)
		}
		if err := topoP.Runs.Delete(t.Context(), protocol.ManifestKey(run2)); err != nil {
			t.Fatal(err)
		}
	}
}

// A producer cannot publish on a worker's event
// subject, and a worker's kind of event (dead) on a producer's subject
// does not end a job for the waiter; the same event from a worker does.
func TestForgedWorkerEventIgnored(t *testing.T) {
	url := appliedServer(t)
	ncP, jsP, _, logP := openAs(t, url, "producer")
	_, jsW, _, _ := openAs(t, url, "worker")
	const run, job = "victim-1", "j0123456789abcdef"
	dead, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: run, Job: job, Time: time.Now().UTC(),
		Kind: protocol.EventDead, Status: protocol.StatusFailed, Pool: "sim", Message: "forged"})
	if err := ncP.Publish(protocol.WorkerEventSubject(run, job), dead); err != nil {
		t.Fatal(err)
	}
	if err := ncP.Flush(); err != nil {
		t.Fatal(err)
	}
	waitViolationAs(t, "producer", logP, fmt.Sprintf("Publish to %q", protocol.WorkerEventSubject(run, job)))
	if _, err := jsP.Publish(t.Context(), protocol.EventSubject(run, job), dead); err != nil {
		t.Fatalf("a producer's event: %v", err)
	}
	w := &watch.Watcher{JS: jsP, Manifest: &protocol.RunManifest{Schema: protocol.SchemaManifest, Run: run,
		Jobs: []protocol.ManifestJob{{ID: job, Pool: "sim", Runner: "sim"}}}}
	states, err := w.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st := states[job]; st.Terminal() || st.Kind == protocol.EventDead {
		t.Fatalf("a producer's dead event ended the job: %+v", st)
	}
	if _, err := jsW.Publish(t.Context(), protocol.WorkerEventSubject(run, job), dead); err != nil {
		t.Fatalf("a worker's event: %v", err)
	}
	states, err = w.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st := states[job]; st.Kind != protocol.EventDead {
		t.Fatalf("a worker's dead event was not taken: %+v", st)
	}
}

// The untrusted producer submits its own runs
// at normal and low priority, not high; it can neither cancel nor rewrite
// a producer's run, nor write a board's health or remove a dead letter;
// only the admin releases a board.
func TestUntrustedProducerOwnsOnlyItsRuns(t *testing.T) {
	url := appliedServer(t)
	_, jsP, topoP, _ := openAs(t, url, "producer")
	ncU, jsU, topoU, logU := openAs(t, url, "untrusted")
	_, jsA, _ := as(t, url, "admin")
	_, _, topoW, _ := openAs(t, url, "worker")

	const trusted = "ci-1"
	sub := &submit.Submitter{JS: jsP, Runs: topoP.Runs, Jobs: topoP.Jobs, Log: zerolog.Nop()}
	if _, err := sub.Submit(t.Context(), submit.Submission{Run: trusted, Submitter: "ci", Priority: protocol.PriorityHigh,
		Jobs: fleettest.SimJobs(t, trusted, 1, nil)}); err != nil {
		t.Fatalf("producer submit: %v", err)
	}
	before, err := topoP.Runs.Get(t.Context(), protocol.ManifestKey(trusted))
	if err != nil {
		t.Fatal(err)
	}

	// Its own run, at normal priority: submitted and cancelled.
	own := protocol.UntrustedRunPrefix + "pr-7"
	subU := &submit.Submitter{JS: jsU, Runs: topoU.Runs, Jobs: topoU.Jobs, Log: zerolog.Nop()}
	if _, err := subU.Submit(t.Context(), submit.Submission{Run: own, Submitter: "fork", Priority: protocol.PriorityNormal,
		Jobs: fleettest.SimJobs(t, own, 1, nil)}); err != nil {
		t.Fatalf("untrusted submit of its own run: %v\n%s", err, logU.String())
	}
	if err := submit.Cancel(t.Context(), topoU.Runs, own); err != nil {
		t.Fatalf("untrusted cancel of its own run: %v", err)
	}

	// Not the producer's run.
	if err := submit.Cancel(shortCtx(t), topoU.Runs, trusted); err == nil {
		t.Error("the untrusted producer cancelled the producer's run")
	}
	if _, err := topoU.Runs.Put(shortCtx(t), protocol.ManifestKey(trusted), []byte(`{"run":"ci-1","jobs":[]}`)); err == nil {
		t.Error("the untrusted producer rewrote the producer's manifest")
	}
	if _, err := topoU.Runs.Put(shortCtx(t), protocol.ManifestKey("ci-2"), []byte(`{}`)); err == nil {
		t.Error("the untrusted producer planted a manifest for a run not its own")
	}
	after, err := topoP.Runs.Get(t.Context(), protocol.ManifestKey(trusted))
	if err != nil || after.Revision() != before.Revision() {
		t.Errorf("the producer's manifest changed: %v", err)
	}
	if _, err := topoP.Runs.Get(t.Context(), protocol.CancelKey(trusted)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the producer's run has a cancel flag: %v", err)
	}

	// Health: the worker writes it, the admin releases, no producer may.
	hk := protocol.HealthKey("w1", "tt0")
	quarantined, _ := json.Marshal(protocol.DeviceHealth{Worker: "w1", Device: "tt0", Pool: "n150", Quarantined: true, Reason: "test"})
	if _, err := topoW.Health.Put(t.Context(), hk, quarantined); err != nil {
		t.Fatal(err)
	}
	for user, kv := range map[string]jetstream.KeyValue{"untrusted": topoU.Health, "producer": topoP.Health} {
		if _, err := fleet.ReleaseBoard(shortCtx(t), kv, "w1", "tt0"); err == nil {
			t.Errorf("the %s released a board", user)
		}
	}
	topoA, err := topology.Open(t.Context(), jsA)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := fleet.ReleaseBoard(t.Context(), topoA.Health, "w1", "tt0"); err != nil || h.Quarantined {
		t.Errorf("the admin's release: %+v %v", h, err)
	}

	// Raw verbs: BENCH_JOBS at any priority, high priority on its own
	// stream, events, dead letters, heartbeats.
	pubs := []string{protocol.JobSubject("sim", protocol.PriorityHigh), protocol.JobSubject("sim", protocol.PriorityLow),
		protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "sim", Priority: protocol.PriorityHigh}.Subject(),
		protocol.EventSubject(trusted, "j1"),
		protocol.WorkerEventSubject(trusted, "j1"), protocol.DeadSubject("sim"), "$KV.bench-workers.w1", "$KV.bench-health.x",
		"$JS.API.STREAM.MSG.DELETE." + protocol.StreamDead, "$KV.bench-runs." + protocol.CancelKey(trusted)}
	for _, s := range pubs {
		if err := ncU.PublishRequest(s, ncU.NewRespInbox(), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ncU.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, s := range pubs {
		waitViolationAs(t, "untrusted", logU, fmt.Sprintf("Publish to %q", s))
	}
	if _, err := jsU.Publish(t.Context(), protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "sim", Priority: protocol.PriorityLow}.Subject(), []byte(`{}`)); err != nil {
		t.Errorf("an untrusted job at low priority: %v", err)
	}
}
