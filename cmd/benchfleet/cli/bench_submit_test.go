package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// `bench submit` prints both rates and their ratio per round and the
// median, and the run it submitted last is really there (and only it: each
// round starts from empty streams): every job in BENCH_JOBS under its content id
// and message id, the manifest in bench-runs and in the store, a queued
// event per job. No wall-clock assertions: only the shape of the output.
func TestBenchSubmit(t *testing.T) {
	t.Parallel()
	const n = 1200 // over ManifestChunkJobs, so the manifest is chunked
	dir := t.TempDir()
	code, out, errOut := ciRun(t, "bench", "submit", "--jobs", strconv.Itoa(n), "--rounds", "2", "--data", dir)
	if code != ExitOK {
		t.Fatalf("bench submit: exit %d\n%s%s", code, out, errOut)
	}
	num := `[0-9]+(\.[0-9]+)?`
	for _, re := range []string{
		`(?m)^round 1  raw jetstream +` + strconv.Itoa(n) + ` msgs +` + num + `s +` + num + ` msgs/s$`,
		`(?m)^round 2  benchfleet +` + strconv.Itoa(n) + ` jobs +` + num + `s +` + num + ` jobs/s`,
		`(?m)^round 2  ratio benchfleet/raw rate ` + num + ` \(time ` + num + `x\)`,
		`(?m)^ratio benchfleet/raw rate ` + num + ` \(median of 2 rounds; min ` + num + `, max ` + num + `\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
	m := regexp.MustCompile(`(?m)^ratio benchfleet/raw rate (` + num + `)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ratio in\n%s", out)
	}
	if r, err := strconv.ParseFloat(m[1], 64); err != nil || r <= 0 {
		t.Errorf("ratio %q: want a positive number", m[1])
	}
	if !strings.Contains(errOut, "submitting a run of") {
		t.Errorf("no progress on stderr:\n%s", errOut)
	}

	// Reopen the bench's server data and look at what it left.
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	_, js := testfleet.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	topo, err := topology.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	man, err := producer.GetManifest(ctx, topo.Runs, "bench-submit-2")
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if len(man.Jobs) != n {
		t.Fatalf("manifest has %d jobs, want %d", len(man.Jobs), n)
	}
	want := map[string]bool{}
	for _, j := range man.Jobs {
		want[j.ID] = true
	}
	if len(want) != n {
		t.Fatalf("manifest has %d distinct job ids, want %d", len(want), n)
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
	events, err := producer.ReadStored(ctx, js, protocol.StreamEvents, []string{protocol.RunEventsFilter("bench-submit-2")}, func(jetstream.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Errorf("%d events published by the submit, want none (a manifest job without events is queued)", events)
	}
	store, err := storage.NewFileBucket(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	var stored protocol.RunManifest
	if err := storage.GetJSON(ctx, store, storage.ManifestKey("bench-submit-2"), &stored); err != nil || len(stored.Jobs) != n {
		t.Errorf("store manifest: %v, %d jobs, want %d", err, len(stored.Jobs), n)
	}

	// A second run into the same data is refused (it would only re-attach).
	if code, _, errOut := ciRun(t, "bench", "submit", "--jobs", "10", "--data", dir); code != ExitUsage || !strings.Contains(errOut, "--data") {
		t.Errorf("bench submit into used --data: exit %d, want %d naming --data: %s", code, ExitUsage, errOut)
	}
}
