package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
)

// A write killed mid-way (SIGKILL) leaves a .tmp-* file
// in a file store that nothing removed. `results compact` removes those
// older than an hour, and so does a worker at start; younger ones (a write
// that may still run) stay.
func TestStaleTempFilesRemovedByCompactAndWorkerStart(t *testing.T) {
	t.Parallel()
	plant := func(dir string) (stale, fresh string) {
		stale = filepath.Join(dir, "results", "v1", "date=2026-01-01", "run=r", ".tmp-4711")
		fresh = filepath.Join(dir, "artifacts", "r", "j", ".tmp-0815")
		for _, p := range []string{stale, fresh} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("half a result"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes(stale, old, old); err != nil {
			t.Fatal(err)
		}
		return stale, fresh
	}
	gone := func(p string) bool { _, err := os.Stat(p); return os.IsNotExist(err) }

	dir := t.TempDir()
	stale, fresh := plant(dir)
	code, out, errOut := runBounded(t, "results", "compact", "--store", "file://"+dir)
	if code != 0 || !strings.Contains(out, "1 stale temporary file removed") {
		t.Errorf("results compact: exit %d\n%s\n%s", code, out, errOut)
	}
	if !gone(stale) || gone(fresh) {
		t.Errorf("after compact: stale removed %v (want true), fresh removed %v (want false)", gone(stale), gone(fresh))
	}

	srv := fleettest.Server(t)
	dir = t.TempDir()
	stale, fresh = plant(dir)
	startWorker(t, "--nats", srv.ClientURL(), "--store", "file://"+dir, "--id", "sweeper", "--state-dir", t.TempDir())
	fleettest.Eventually(t, 10*time.Second, "the worker to remove the stale temporary file", func() bool { return gone(stale) })
	if gone(fresh) {
		t.Errorf("the worker removed a fresh temporary file")
	}
}
