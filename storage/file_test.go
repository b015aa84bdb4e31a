package storage_test

import (
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
