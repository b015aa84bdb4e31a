package bench

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	workers "github.com/benchfleet/benchfleet/worker/fleet"
)

// `bench submit` measures both rates and their ratio per round, and the
// run it submitted last is really there (and only it: each round starts
// from empty streams): every job in BENCH_JOBS under its content id and
// message id, the manifest in bench-runs and in the store, no event. No
// wall-clock assertions.
func TestRunSubmit(t *testing.T) {
	t.Parallel()
	const n = 1200 // over ManifestChunkJobs, so the manifest is chunked
	dir := t.TempDir()
	rep, err := RunSubmit(t.Context(), SubmitConfig{Jobs: n, Rounds: 2, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 2 {
		t.Fatalf("%d rounds, want 2", len(rep.Rounds))
	}
	for i, r := range rep.Rounds {
		if r.Queued != n || r.Raw <= 0 || r.Fleet <= 0 || !(r.Ratio > 0) {
			t.Errorf("round %d: %+v, want %d queued and positive figures", i+1, r, n)
		}
	}
	spreadWithin(t, rep.Spread, rep.Rounds[0].Ratio, rep.Rounds[1].Ratio)

	// Reopen the bench's server data and look at what it left.
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	_, js := fleettest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	topo, err := topology.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	man, err := runstate.GetManifest(ctx, topo.Runs, "bench-submit-2")
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	want := map[string]bool{}
	for _, j := range man.Jobs {
		want[j.ID] = true
	}
	if len(man.Jobs) != n || len(want) != n {
		t.Fatalf("manifest has %d jobs, %d distinct ids; want %d", len(man.Jobs), len(want), n)
	}
	// A work-queue stream takes no ordered consumer: read it by sequence.
	info, err := topo.Jobs.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		msg, err := topo.Jobs.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("BENCH_JOBS message %d: %v", seq, err)
		}
		j, err := protocol.DecodeJob(msg.Data)
		if err != nil {
			t.Fatalf("stored job: %v", err)
		}
		if err := j.CheckID(); err != nil {
			t.Errorf("stored job: %v", err)
		}
		if id := msg.Header.Get(jetstream.MsgIDHeader); id != j.ID {
			t.Errorf("job %s published with message id %q", j.ID, id)
		}
		if !want[j.ID] || seen[j.ID] {
			t.Errorf("job %s: in the manifest %t, seen before %t", j.ID, want[j.ID], seen[j.ID])
		}
		seen[j.ID] = true
	}
	if len(seen) != n {
		t.Errorf("BENCH_JOBS holds %d of the run's %d jobs", len(seen), n)
	}
	events, err := workers.ReadStored(ctx, js, protocol.StreamEvents, []string{protocol.RunEventsFilter("bench-submit-2")}, func(jetstream.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Errorf("%d events published by the submit, want none (a manifest job without events is queued)", events)
	}
	store, err := file.NewBucket(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	var stored protocol.RunManifest
	if err := storage.GetJSON(ctx, store, storage.ManifestKey("bench-submit-2"), &stored); err != nil || len(stored.Jobs) != n {
		t.Errorf("store manifest: %v, %d jobs, want %d", err, len(stored.Jobs), n)
	}

	// A second run into the same data is refused (it would only re-attach).
	_, err = RunSubmit(t.Context(), SubmitConfig{Jobs: 10, Rounds: 1, Dir: dir})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("a second run into the same data: %v, want a ConfigError naming --data", err)
	}
}
