package s3test

import (
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage/s3"
)

// Config is the config of a bucket on s under prefix, with the server's
// static credentials (so tests stay parallel: no SetEnv), S3's smallest
// part (multipart tests stay small) and short retries.
func (s *Server) Config(prefix string) s3.Config {
	return s3.Config{
		Bucket:          s.Bucket,
		Prefix:          prefix,
		Endpoint:        s.Endpoint,
		Region:          Region,
		PathStyle:       true,
		AccessKeyID:     s.AccessKey,
		SecretAccessKey: s.SecretKey,
		PartSize:        s3.MinPartSize,
		MaxRetries:      2,
		RetryWaitMin:    10 * time.Millisecond,
		RetryWaitMax:    50 * time.Millisecond,
		CallTimeout:     10 * time.Second,
	}
}

// Open opens the bucket cfg names (e.g. Server.Config's), failing t if it
// cannot, and closes it when t ends.
func Open(t testing.TB, cfg s3.Config) *s3.Bucket {
	t.Helper()
	b, err := s3.NewBucket(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
