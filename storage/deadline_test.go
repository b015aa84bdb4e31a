package storage_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/storagetest"
)

// Through WithCallTimeout the file store still conforms.
func TestCallTimeoutBucketConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := file.NewBucket(t.TempDir())
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
		b := s3test.Open(t, srv.Config("timed/"+strings.ReplaceAll(t.Name(), "/", "-")))
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
	cfg := srv.Config("frozen")
	cfg.CallTimeout = time.Minute
	b := storage.WithCallTimeout(s3test.Open(t, cfg), time.Second)
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

// waitFor polls cond until it holds, failing t after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
