package submit_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// Requeue records the repeats in the run's manifest (bench-runs, chunked
// for a big run, and the store's copy), publishes them once at high
// priority, and a re-submit of the run still re-attaches.
func TestRequeueRecordsAndPublishesRepeats(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, protocol.ManifestChunkJobs} {
		srv := fleettest.Server(t)
		_, js := fleettest.Connect(t, srv.ClientURL())
		topo := fleettest.Topology(t, js, topology.Config{})
		store, err := file.NewBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		jobs := fleettest.SimJobs(t, "pr-9", n, nil)
		res := fleettest.Submit(t, js, topo, store, "pr-9", protocol.PriorityNormal, jobs)
		// The gate's report: the first job passed and is suspect.
		suspect := &protocol.Result{Job: jobs[0].ID, Run: "pr-9", Pool: "sim", Runner: "sim", Status: protocol.StatusPassed,
			Benchmark: jobs[0].Benchmark, Labels: jobs[0].Labels, Worker: protocol.WorkerRef{ID: "w1"}, Device: protocol.DeviceRef{ID: "sim-3"},
			Measurements: protocol.Measurements{SamplesPerSec: 900}}
		rows := []runstate.Row{{Job: jobs[0].ID, Status: protocol.StatusPassed, Result: suspect, Verdict: string(gate.VerdictRegression)}}
		for _, j := range jobs[1:] {
			rows = append(rows, runstate.Row{Job: j.ID, Status: protocol.StatusPassed})
		}
		rep := &gate.RunReport{Manifest: res.Manifest, Rows: rows, GateOn: true,
			Verdicts: []gate.GateRow{{Job: jobs[0].ID, Verdict: gate.VerdictRegression, Suspect: true}}}
		c := &submit.Confirmer{JS: js, Store: store, Repeats: 2, Log: zerolog.Nop()}
		m, queued, err := c.Requeue(t.Context(), rep)
		if err != nil || queued != 2 || len(m.Jobs) != n+2 {
			t.Fatalf("n=%d: requeue: %v, %d queued, %d jobs in the manifest", n, err, queued, len(m.Jobs))
		}
		for _, got := range []func() (*protocol.RunManifest, error){
			func() (*protocol.RunManifest, error) { return runstate.GetManifest(t.Context(), topo.Runs, "pr-9") },
			func() (*protocol.RunManifest, error) {
				var sm protocol.RunManifest
				return &sm, storage.GetJSON(t.Context(), store, storage.ManifestKey("pr-9"), &sm)
			},
		} {
			gm, err := got()
			if err != nil || len(gm.Jobs) != n+2 {
				t.Fatalf("n=%d: manifest read back: %v, %d jobs", n, err, len(gm.Jobs))
			}
			r1, r2 := gm.Jobs[n], gm.Jobs[n+1]
			if r1.Repeat != 1 || r2.Repeat != 2 || r1.Of != jobs[0].ID || r2.Of != jobs[0].ID || r1.ID == r2.ID {
				t.Errorf("n=%d: repeats in the manifest: %+v %+v", n, r1, r2)
			}
		}
		// Published once, on the high subject, avoiding the suspect's board.
		stream, err := js.Stream(t.Context(), protocol.StreamJobs)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := stream.GetLastMsgForSubject(t.Context(), protocol.JobSubject("sim", protocol.PriorityHigh))
		if err != nil {
			t.Fatalf("n=%d: no high-priority job: %v", n, err)
		}
		j, err := protocol.DecodeJob(msg.Data)
		if err != nil || j.Repeat != 2 || len(j.Avoid) != 1 || j.Avoid[0] != "w1/sim-3" {
			t.Errorf("n=%d: published repeat %+v (%v)", n, j, err)
		}
		// Again: the suspect has its repeats, nothing more is queued.
		if _, queued, err := c.Requeue(t.Context(), rep); err != nil || queued != 0 {
			t.Errorf("n=%d: second requeue: %v, %d queued", n, err, queued)
		}
		// A re-submit of the same jobs re-attaches (the repeats are not a change).
		p := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Store: store, Log: zerolog.Nop()}
		again, err := p.Submit(t.Context(), submit.Submission{Run: "pr-9", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
		if err != nil || !again.Attached {
			t.Errorf("n=%d: re-submit: %v %+v", n, err, again)
		}
	}
}

// suspectRun submits a run of n sim jobs to a fresh fleet and returns the
// gate's report with its first job passed and suspect (the report's only
// row), and the fleet.
func suspectRun(t *testing.T, run string, n int) (*gate.RunReport, *protocol.Job, jetstream.JetStream, *topology.Handles, storage.Bucket) {
	t.Helper()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jobs := fleettest.SimJobs(t, run, n, nil)
	res := fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	suspect := &protocol.Result{Job: jobs[0].ID, Run: run, Pool: "sim", Runner: "sim", Status: protocol.StatusPassed,
		Benchmark: jobs[0].Benchmark, Labels: jobs[0].Labels, Worker: protocol.WorkerRef{ID: "w1"}, Device: protocol.DeviceRef{ID: "sim-3"},
		Measurements: protocol.Measurements{SamplesPerSec: 900}}
	rep := &gate.RunReport{Manifest: res.Manifest, GateOn: true,
		Rows:     []runstate.Row{{Job: jobs[0].ID, Status: protocol.StatusPassed, Result: suspect, Verdict: string(gate.VerdictRegression)}},
		Verdicts: []gate.GateRow{{Job: jobs[0].ID, Verdict: gate.VerdictRegression, Suspect: true}}}
	return rep, jobs[0], js, topo, store
}

// A Requeue whose publish fails records nothing: a later one (a
// re-triggered gate) queues the repeats rather than waiting for repeats
// no queue holds.
func TestRequeueFailedPublishRecordsNothing(t *testing.T) {
	t.Parallel()
	rep, _, js, topo, store := suspectRun(t, "pr-10", 1)
	if err := js.DeleteStream(t.Context(), protocol.StreamJobs); err != nil {
		t.Fatal(err)
	}
	c := &submit.Confirmer{JS: js, Store: store, Repeats: 2, Log: zerolog.Nop()}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, _, err := c.Requeue(ctx, rep); err == nil {
		t.Fatal("requeue with no job stream: no error")
	}
	m, err := runstate.GetManifest(t.Context(), topo.Runs, "pr-10")
	if err != nil || len(m.Jobs) != 1 {
		t.Fatalf("manifest after a failed publish: %v, %d jobs (want the original only)", err, len(m.Jobs))
	}
	fleettest.Topology(t, js, topology.Config{})
	if _, queued, err := c.Requeue(t.Context(), rep); err != nil || queued != 2 {
		t.Fatalf("requeue again: %v, %d queued (want 2)", err, queued)
	}
}

// A message published first under a repeat's id (they are predictable) is
// a squat, as it is for Submit: Requeue refuses it rather than count the
// repeat queued.
func TestRequeueRefusesSquattedRepeat(t *testing.T) {
	t.Parallel()
	rep, _, js, _, store := suspectRun(t, "pr-11", 1)
	j, err := gate.RepeatJob(rep.Manifest, rep.Manifest.Jobs[0], rep.Rows[0].Result, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: protocol.JobSubject("sim", protocol.PriorityHigh), Data: []byte(`{"squat":true}`), Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, j.ID)
	if _, err := js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	c := &submit.Confirmer{JS: js, Store: store, Repeats: 2, Log: zerolog.Nop()}
	if _, _, err := c.Requeue(t.Context(), rep); !errors.Is(err, submit.ErrSquatted) {
		t.Fatalf("requeue over a squatted repeat id: %v, want ErrSquatted", err)
	}
}

// The repeats of a big run go into its manifest without rewriting the
// chunks its header names: only the last one grows, and a reader at the
// header before (a gate that lost the update, or died) reads the jobs that
// header counts, not a broken manifest.
func TestRequeueAppendsToChunkedManifest(t *testing.T) {
	t.Parallel()
	const n = protocol.ManifestChunkJobs + 500
	rep, _, js, topo, store := suspectRun(t, "pr-12", n)
	first, err := topo.Runs.Get(t.Context(), protocol.ManifestChunkKey("pr-12", 0))
	if err != nil {
		t.Fatal(err)
	}
	last, err := topo.Runs.Get(t.Context(), protocol.ManifestChunkKey("pr-12", 1))
	if err != nil {
		t.Fatal(err)
	}
	// An append the header does not count yet.
	var tail []protocol.ManifestJob
	if err := json.Unmarshal(last.Value(), &tail); err != nil {
		t.Fatal(err)
	}
	grown, err := json.Marshal(append(tail, protocol.ManifestJob{ID: "uncounted", Repeat: 1, Of: rep.Manifest.Jobs[0].ID}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Runs.Put(t.Context(), protocol.ManifestChunkKey("pr-12", 1), grown); err != nil {
		t.Fatal(err)
	}
	if m, err := runstate.GetManifest(t.Context(), topo.Runs, "pr-12"); err != nil {
		t.Fatalf("manifest with an uncounted append: %v", err)
	} else if len(m.Jobs) != n {
		t.Fatalf("manifest with an uncounted append: %d jobs (want %d)", len(m.Jobs), n)
	}
	c := &submit.Confirmer{JS: js, Store: store, Repeats: 2, Log: zerolog.Nop()}
	if _, queued, err := c.Requeue(t.Context(), rep); err != nil || queued != 2 {
		t.Fatalf("requeue: %v, %d queued", err, queued)
	}
	m, err := runstate.GetManifest(t.Context(), topo.Runs, "pr-12")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Jobs) != n+2 || m.Jobs[n].Repeat != 1 || m.Jobs[n+1].Repeat != 2 {
		t.Fatalf("manifest with the repeats: %d jobs", len(m.Jobs))
	}
	if again, err := topo.Runs.Get(t.Context(), protocol.ManifestChunkKey("pr-12", 0)); err != nil || again.Revision() != first.Revision() {
		t.Errorf("chunk 0 rewritten: %v", err)
	}
}
