package file_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage/file"
)

// A Put killed mid-write leaves its .tmp-* file; only
// those older than the cutoff are removed, never a key and never the
// temporary file of a Put that may still be running.
func TestFileBucketRemoveStaleTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Put(ctx, "results/v1/date=2026-01-01/run=r/j.json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	var stale []string
	for _, p := range []string{"results/v1/date=2026-01-01/run=r/.tmp-123", "artifacts/r/j/attempt-1/.tmp-456", ".tmp-789"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, old, old); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, full)
	}
	fresh := filepath.Join(dir, "results", ".tmp-fresh")
	if err := os.WriteFile(fresh, []byte("writing"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := b.RemoveStaleTemps(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(stale) {
		t.Errorf("removed %d temporary files, want %d", n, len(stale))
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary file (a Put running) was removed: %v", err)
	}
	if ok, err := b.Exists(ctx, "results/v1/date=2026-01-01/run=r/j.json"); !ok || err != nil {
		t.Errorf("the key is gone: %v %v", ok, err)
	}
}
