package storage_test

import (
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/storagetest"
)

// The conformance suite holds through a wrapper (storage.Observe), which
// passes every operation on.
func TestObservedBucketConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := file.NewBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return storage.Observe(b, func(string, error, time.Duration) {})
	})
}

// Through a wrapper (storage.Observe) the S3 bucket still conforms.
func TestS3BucketConformanceObserved(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b := s3test.Open(t, srv.Config("obs/"+strings.ReplaceAll(t.Name(), "/", "-")))
		return storage.Observe(b, func(string, error, time.Duration) {})
	})
}
