package worker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// With the store down and the spool unable to take the result (both
// broken on disk), a job that runs out of deliveries is dead-lettered with
// the reason that is true — its result could not be stored — not as a
// crashed worker.
func TestDeadLetterReasonStoreDownSpoolFull(t *testing.T) {
	t.Parallel()
	f := newFaultFleet(t)
	dir := t.TempDir()
	storeDir, spoolDir := filepath.Join(dir, "store"), filepath.Join(dir, "spool")
	store, err := storage.NewFileBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	spool, err := storage.NewSpoolWithConfig(storage.SpoolConfig{Dir: spoolDir, Bucket: store})
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
	cfg.Store, cfg.Sink, cfg.MaxDeliver = store, spool, 2
	testfleet.StartWorker(t, cfg)
	const run = "store-down"
	jobs := testfleet.SimJobs(t, run, 1, map[string]string{"sim.duration": "10ms"})
	testfleet.Submit(t, f.js, f.topo, nil, run, protocol.PriorityNormal, jobs)

	testfleet.Eventually(t, 30*time.Second, "the dead letter", func() bool {
		info, err := f.topo.Dead.Info(t.Context())
		return err == nil && info.State.Msgs >= 1
	})
	e := f.dlqList(t)[0]
	if strings.Contains(e.Reason, "crash") || !strings.Contains(e.Reason, "result") || !strings.Contains(e.Reason, "spool") {
		t.Errorf("dead letter reason %q, want the truth: the result could not be stored (store down, spool failed)", e.Reason)
	}
	if e.ID != jobs[0].ID || e.Attempts != 2 {
		t.Errorf("dead letter %s after %d attempts, want %s after 2", e.ID, e.Attempts, jobs[0].ID)
	}
}
