package storage_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// remnants is a real file store with the remnant VersityGW's posix backend
// leaves for a key when it is killed in the middle of writing it (seen in
// worker's TestS3OutageSpoolsAndEveryJobHasOneResult): every conditional
// create of the key is refused as if it existed, while nothing can be read
// there, until a plain put writes over it.
type remnants struct {
	storage.Bucket
	mu   sync.Mutex
	keys map[string]bool
}

func (r *remnants) Put(ctx context.Context, key string, body io.Reader, opts ...storage.PutOption) error {
	r.mu.Lock()
	left := r.keys[key]
	o := storage.ApplyPutOptions(opts)
	if left && !o.IfAbsent {
		delete(r.keys, key)
	}
	r.mu.Unlock()
	if left && o.IfAbsent {
		return storage.ErrExists
	}
	return r.Bucket.Put(ctx, key, body, opts...)
}

// A result and an artifact whose keys hold a remnant are delivered: the
// refused create with nothing to read is written over, and a refusal with
// something there still stands.
func TestDeliverWritesOverARemnant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fb, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 12, 1, 3, 2, 1, 0, time.UTC)
	r := &protocol.Result{Schema: protocol.SchemaResult, Job: "jleft", Run: "rleft", RunCreatedAt: created, Pool: "sim", Runner: "sim",
		Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
		Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 2, LoopCount: 4, WarmupCount: 4, DataFormat: "bfloat16"}}
	log := filepath.Join(t.TempDir(), "worker.log")
	if err := os.WriteFile(log, []byte("the attempt's log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resultKey := storage.ResultKey(r.RunCreatedAt, r.Run, r.Job)
	artifactKey := storage.ArtifactKey(r.Run, r.Job, r.Attempt, "worker.log")
	b := &remnants{Bucket: fb, keys: map[string]bool{resultKey: true, artifactKey: true}}

	key, err := storage.Deliver(ctx, b, r, []storage.ArtifactFile{{Name: "worker.log", Path: log}})
	if err != nil || key != resultKey {
		t.Fatalf("deliver over remnants: %s, %v; want %s, nil", key, err, resultKey)
	}
	got, err := storage.ReadResult(ctx, fb, resultKey)
	if err != nil || got.Job != r.Job || len(got.Artifacts) != 1 {
		t.Fatalf("stored result: %+v, %v; want job %s with its artifact", got, err, r.Job)
	}
	rc, err := fb.Get(ctx, artifactKey)
	if err != nil {
		t.Fatalf("artifact: %v", err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "the attempt's log\n" {
		t.Errorf("artifact holds %q", data)
	}
	// Written once still: a second delivery finds the result there.
	if _, err := storage.Deliver(ctx, b, r, nil); !errors.Is(err, storage.ErrExists) {
		t.Errorf("second delivery: %v, want ErrExists", err)
	}
}
