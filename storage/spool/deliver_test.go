package spool_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// Spool.Deliver treats a store that does not answer like one that is
// down: the result is spooled within CallTimeout, and after the store
// resumes, Flush delivers exactly one result.
func TestSpoolDeliverFrozenStoreSpools(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	cfg := srv.Config("spool-frozen")
	cfg.CallTimeout = time.Minute
	bucket := s3test.Open(t, cfg)
	sp, err := spool.NewWithConfig(spool.Config{Dir: t.TempDir(), Bucket: bucket, CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := testResult("frozen-run", "job-frozen", 1)
	files := []storage.ArtifactFile{{Name: "log.txt", Data: []byte("a log")}}
	srv.Freeze()
	defer srv.Thaw()
	start := time.Now()
	key, spooled, err := sp.Deliver(t.Context(), r, files)
	if err != nil || !spooled {
		t.Fatalf("Deliver on a frozen store: spooled=%v, %v; want spooled", spooled, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Deliver on a frozen store took %s, want about CallTimeout (1s)", took)
	}
	srv.Thaw()
	waitFor(t, 90*time.Second, "the spool to drain", func() bool {
		return sp.Flush(t.Context()) == nil && sp.Pending() == 0
	})
	got, err := storage.ReadResult(t.Context(), bucket, key)
	if err != nil || got.Job != r.Job || got.Status != protocol.StatusPassed || len(got.Artifacts) != 1 {
		t.Fatalf("result after thaw: %+v, %v", got, err)
	}
}

// With the store down and the spool on a full file system, Check says
// the spool refuses, and Deliver fails matching ErrRefused and the
// store's ErrUnavailable (the host cannot record, the job is not at
// fault).
func TestSpoolFullDiskRefuses(t *testing.T) {
	t.Parallel()
	dir := smallTmpfs(t)
	store := &switchBucket{Bucket: newFileBucket(t)}
	store.down.Store(true)
	sp, err := spool.NewWithConfig(spool.Config{Dir: filepath.Join(dir, "spool"), Bucket: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Check(t.Context()); err != nil {
		t.Fatalf("Check on an empty tmpfs: %v", err)
	}
	fill(t, dir)
	if err := sp.Check(t.Context()); !errors.Is(err, spool.ErrRefused) || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Check on a full disk: %v, want ErrRefused: no space left", err)
	}
	_, spooled, err := sp.Deliver(t.Context(), testResult("full-run", "job-full", 1),
		[]storage.ArtifactFile{{Name: "log.txt", Data: bytes.Repeat([]byte("x"), 8192)}})
	if spooled || !errors.Is(err, spool.ErrRefused) || !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Deliver with the store down and the disk full: spooled=%v, %v; want ErrRefused and ErrUnavailable", spooled, err)
	}
}

// smallTmpfs mounts a 2 MiB tmpfs on a temporary directory. It skips the
// test where mounting is refused (not root, no CAP_SYS_ADMIN).
func smallTmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=2m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes into dir until its file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.CreateTemp(dir, "ballast-*")
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return
		}
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
