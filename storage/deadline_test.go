package storage_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/storagetest"
)

// Through WithCallTimeout the file store still conforms.
func TestCallTimeoutBucketConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := storage.NewFileBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return storage.WithCallTimeout(b, 5*time.Second)
	})
}

// Through WithCallTimeout the S3 bucket still conforms (its large object
// goes up within the time a Put gets per byte).
func TestS3BucketConformanceCallTimeout(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b := newS3Bucket(t, s3Config(srv, "timed/"+strings.ReplaceAll(t.Name(), "/", "-")))
		return storage.WithCallTimeout(b, 5*time.Second)
	})
}

// A store that accepts connections and never answers (VersityGW frozen
// with SIGSTOP): through WithCallTimeout every call fails within its
// timeout as unavailable, not after the backend's 60 s and not as "not
// found"; once the server resumes, the same bucket answers again.
func TestCallTimeoutFrozenS3IsUnavailable(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	cfg := s3Config(srv, "frozen")
	cfg.CallTimeout = time.Minute
	b := storage.WithCallTimeout(newS3Bucket(t, cfg), time.Second)
	ctx := t.Context()
	if err := b.Put(ctx, "k", strings.NewReader("v"), storage.Size(1)); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	defer srv.Thaw()
	calls := []struct {
		op string
		fn func() error
	}{
		{"exists", func() error { _, err := b.Exists(ctx, "k"); return err }},
		{"attributes", func() error { _, err := b.Attributes(ctx, "k"); return err }},
		{"get", func() error {
			rc, err := b.Get(ctx, "k")
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"put", func() error { return b.Put(ctx, "k2", strings.NewReader("v"), storage.Size(1)) }},
		{"delete", func() error { return b.Delete(ctx, "k2") }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.fn()
		took := time.Since(start)
		if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within") {
			t.Errorf("%s on a frozen store: %v, want unavailable: no answer within 1s", c.op, err)
		}
		if took > 5*time.Second {
			t.Errorf("%s on a frozen store took %s, want about 1s", c.op, took)
		}
	}
	srv.Thaw()
	waitFor(t, 30*time.Second, "the thawed store to answer", func() bool {
		ok, err := b.Exists(ctx, "k")
		return err == nil && ok
	})
	rc, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(data) != "v" {
		t.Fatalf("get after thaw: %q, %v", data, err)
	}
}

// Spool.Deliver treats a store that does not answer like one that is
// down: the result is spooled within CallTimeout, and after the store
// resumes, Flush delivers exactly one result.
func TestSpoolDeliverFrozenStoreSpools(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	cfg := s3Config(srv, "spool-frozen")
	cfg.CallTimeout = time.Minute
	bucket := newS3Bucket(t, cfg)
	spool, err := storage.NewSpoolWithConfig(storage.SpoolConfig{Dir: t.TempDir(), Bucket: bucket, CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := testResult("frozen-run", "job-frozen", 1)
	files := []storage.ArtifactFile{{Name: "log.txt", Data: []byte("a log")}}
	srv.Freeze()
	defer srv.Thaw()
	start := time.Now()
	key, spooled, err := spool.Deliver(t.Context(), r, files)
	if err != nil || !spooled {
		t.Fatalf("Deliver on a frozen store: spooled=%v, %v; want spooled", spooled, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Deliver on a frozen store took %s, want about CallTimeout (1s)", took)
	}
	srv.Thaw()
	waitFor(t, 90*time.Second, "the spool to drain", func() bool {
		return spool.Flush(t.Context()) == nil && spool.Pending() == 0
	})
	got, err := storage.ReadResult(t.Context(), bucket, key)
	if err != nil || got.Job != r.Job || got.Status != protocol.StatusPassed || len(got.Artifacts) != 1 {
		t.Fatalf("result after thaw: %+v, %v", got, err)
	}
}

// With the store down and the spool on a full file system, Check says
// the spool refuses, and Deliver fails matching ErrSpoolRefused and the
// store's ErrUnavailable (the host cannot record, the job is not at
// fault).
func TestSpoolFullDiskRefuses(t *testing.T) {
	t.Parallel()
	dir := smallTmpfs(t)
	store := &switchBucket{Bucket: newFileBucket(t)}
	store.down.Store(true)
	spool, err := storage.NewSpoolWithConfig(storage.SpoolConfig{Dir: filepath.Join(dir, "spool"), Bucket: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.Check(t.Context()); err != nil {
		t.Fatalf("Check on an empty tmpfs: %v", err)
	}
	fill(t, dir)
	if err := spool.Check(t.Context()); !errors.Is(err, storage.ErrSpoolRefused) || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Check on a full disk: %v, want ErrSpoolRefused: no space left", err)
	}
	_, spooled, err := spool.Deliver(t.Context(), testResult("full-run", "job-full", 1),
		[]storage.ArtifactFile{{Name: "log.txt", Data: bytes.Repeat([]byte("x"), 8192)}})
	if spooled || !errors.Is(err, storage.ErrSpoolRefused) || !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Deliver with the store down and the disk full: spooled=%v, %v; want ErrSpoolRefused and ErrUnavailable", spooled, err)
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
