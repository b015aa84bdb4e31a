package storage_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// Created_at is not in a job's content id, so a
// finished job can be republished with another one. Its second delivery
// (another date, the same attempt number) records nothing: one result per
// job whatever its created_at, and its artifact is not overwritten.
func TestDeliverOneResultPerJobWhateverItsDate(t *testing.T) {
	t.Parallel()
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		b, err := file.NewBucket(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		checkOneResultPerJob(t, b)
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		srv := s3test.Start(t)
		checkOneResultPerJob(t, s3test.Open(t, srv.Config("once/")))
	})
}

func checkOneResultPerJob(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	day1 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	day2 := day1.Add(72 * time.Hour)
	result := func(created time.Time) *protocol.Result {
		return &protocol.Result{Schema: protocol.SchemaResult, Job: "jonce", Run: "ronce", RunCreatedAt: created, Pool: "sim", Runner: "sim",
			Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
			Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 2, LoopCount: 4, WarmupCount: 4, DataFormat: "bfloat16"}}
	}
	first := result(day1)
	key1, err := storage.Deliver(ctx, b, first, []storage.ArtifactFile{{Name: "log.txt", Data: []byte("the first run")}})
	if err != nil {
		t.Fatal(err)
	}
	// The same delivery again (a retried Deliver of the same attempt):
	// ErrExists, the artifact is the same file.
	if _, err := storage.Deliver(ctx, b, result(day1), []storage.ArtifactFile{{Name: "log.txt", Data: []byte("the first run")}}); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("the same delivery again: %v, want ErrExists", err)
	}
	key2, err := storage.Deliver(ctx, b, result(day2), []storage.ArtifactFile{{Name: "log.txt", Data: []byte("the republished run")}})
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("the job republished with another created_at: %v, want ErrExists", err)
	}
	if key2 != key1 {
		t.Errorf("refused delivery names %s, want the recorded result %s", key2, key1)
	}
	var results []string
	for k, err := range b.List(ctx, storage.PrefixResults) {
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, ok := storage.ResultKeyParts(k); ok {
			results = append(results, k)
		}
	}
	if len(results) != 1 || results[0] != key1 {
		t.Errorf("results stored: %v, want only %s", results, key1)
	}
	if got := read(t, ctx, b, first.Artifacts[0].Key); got != "the first run" {
		t.Errorf("artifact holds %q after the republish, want the first run's", got)
	}
	if k, err := storage.RecordedResultKey(ctx, b, "ronce", "jonce", storage.ResultKey(day2, "ronce", "jonce")); err != nil || k != key1 {
		t.Errorf("RecordedResultKey: %s, %v; want %s", k, err, key1)
	}
	// An artifact key holding other content is an error, never an
	// overwrite nor a record with a stale sha256.
	_, err = storage.UploadArtifacts(ctx, b, first, []storage.ArtifactFile{{Name: "log.txt", Data: []byte("other")}})
	if !errors.Is(err, storage.ErrArtifactConflict) {
		t.Errorf("upload over an artifact with other content: %v, want ErrArtifactConflict", err)
	}
	if got := read(t, ctx, b, first.Artifacts[0].Key); got != "the first run" {
		t.Errorf("artifact holds %q, want the first run's", got)
	}
}

func read(t *testing.T, ctx context.Context, b storage.Bucket, key string) string {
	t.Helper()
	rc, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// A reader asking for a run by name learns its date from a job marker
// (one listing, one read), and bounds its scan by a fallback for a name
// that was never a run.
func TestRunSinceFromAJobMarker(t *testing.T) {
	t.Parallel()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &protocol.Result{Schema: protocol.SchemaResult, Run: "dated", Job: "j1", RunCreatedAt: time.Date(2026, 3, 7, 15, 4, 5, 0, time.UTC),
		Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Attempt: 1}
	if _, err := storage.Deliver(t.Context(), b, r, nil); err != nil {
		t.Fatal(err)
	}
	fallback := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if got := storage.RunSince(t.Context(), b, "dated", fallback); !got.Equal(time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("RunSince of a run with results: %s, want its date 2026-03-07", got)
	}
	if got := storage.RunSince(t.Context(), b, "never-a-run", fallback); !got.Equal(fallback) {
		t.Fatalf("RunSince of an unknown run: %s, want the fallback", got)
	}
}
