package file_test

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/storagetest"
)

func TestFileBucketConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := file.NewBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}

// A Put into a new folder makes the folder; no Put leaves its temporary
// file behind, whether it was renamed to the key, linked to it, or refused
// (the key was already there).
func TestFileBucketPutLeavesNoTemporaryFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := file.NewBucket(dir)
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
