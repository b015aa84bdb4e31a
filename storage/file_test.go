package storage_test

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/storagetest"
	"github.com/rs/zerolog"
)

func TestFileBucketConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := storage.NewFileBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}

func TestOpenFileURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, u := range []string{dir, "file://" + dir} {
		b, err := storage.Open(t.Context(), u, zerolog.Nop())
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if fb, ok := b.(*storage.FileBucket); !ok || fb.Root() != dir {
			t.Fatalf("Open(%q) = %T %v", u, b, b)
		}
	}
}

// The conformance suite holds through a wrapper (storage.Observe), which
// passes every operation on.
func TestObservedBucketConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := storage.NewFileBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return storage.Observe(b, func(string, error, time.Duration) {})
	})
}

// A Put into a new folder makes the folder; no Put leaves its temporary
// file behind, whether it was renamed to the key, linked to it, or refused
// (the key was already there).
func TestFileBucketPutLeavesNoTemporaryFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := storage.NewFileBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	for _, key := range []string{"a/new/folder/x.txt", "a/new/folder/y.txt", "top.txt"} {
		if err := b.Put(ctx, key, strings.NewReader("v1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Put(ctx, "a/new/once.json", strings.NewReader("1"), storage.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "a/new/once.json", strings.NewReader("2"), storage.IfAbsent()); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second conditional put: %v, want ErrExists", err)
	}
	var left []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			left = append(left, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
	rc, err := b.Get(ctx, "a/new/folder/y.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "v1" {
		t.Fatalf("read %q, want v1", got)
	}
}
