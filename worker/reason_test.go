package worker_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// With the store and the spool both unable to take a result (each broken
// on disk: its directory became a plain file), the job is the host's
// victim, not its cause: it is handed back without a dead letter however
// often it could have been delivered, the worker claims nothing more and
// says why (status, /healthz 503), and once the store works again the job
// passes with one result.
func TestStoreAndSpoolBrokenJobWaits(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	dir := t.TempDir()
	storeDir, spoolDir := filepath.Join(dir, "store"), filepath.Join(dir, "spool")
	store, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spool.NewWithConfig(spool.Config{Dir: spoolDir, Bucket: store})
	if err != nil {
		t.Fatal(err)
	}
	// Both disks "fail": each directory becomes a plain file.
	for _, d := range []string{storeDir, spoolDir} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d, []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.workerConfig(t, "full-w", 1)
	cfg.Store, cfg.Sink, cfg.MaxDeliver = store, sp, 2
	w := fleettest.StartWorker(t, cfg)
	const run = "store-down"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})
	fleettest.Submit(t, f.js, f.topo, nil, run, protocol.PriorityNormal, jobs)

	fleettest.Eventually(t, 30*time.Second, "the worker to say it cannot record results", func() bool {
		st := w.Status()
		return strings.Contains(st.Store, "cannot record results") && strings.Contains(st.Store, "spool") &&
			strings.Contains(st.Devices[0].Reason, "not claiming")
	})
	if code, body := healthz(t, w); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot record results") {
		t.Errorf("/healthz: %d %q, want 503 saying it cannot record results", code, body)
	}
	// Longer than MaxDeliver deliveries take at this backoff: the job
	// waits, it is not dead-lettered.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if info, err := f.topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
			t.Fatalf("dead letters while the host cannot record: %+v, %v; want none", info, err)
		}
	}
	if n := len(eventsOf(f.events(t, run), jobs[0].ID, protocol.EventClaimed)); n > 1 {
		t.Errorf("the job ran %d times while nothing could be recorded, want at most once", n)
	}

	// The store's disk is back.
	if err := os.Remove(storeDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool {
		rs, _, err := index.QueryJSON(t.Context(), store, index.Filter{Run: run})
		return err == nil && len(rs) == 1
	})
	if r := fleettest.Results(t, store, run)[jobs[0].ID]; r == nil || r.Status != protocol.StatusPassed {
		t.Errorf("result %+v, want passed", r)
	}
	if info, err := f.topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters: %+v, %v; want none", info, err)
	}
	fleettest.Eventually(t, 10*time.Second, "the slot to claim again", func() bool {
		st := w.Status()
		return st.Store == "" && st.Devices[0].Reason == ""
	})
}
