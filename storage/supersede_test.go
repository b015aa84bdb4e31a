package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// A dead letter's result is written once, and only the
// result of a later attempt replaces it; queries see the replacement also
// where the date was compacted.
func TestDeliverReplacesOnlyADeadLettersResult(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	result := func(job string, attempt int, status protocol.Status, class string) *protocol.Result {
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: job, Run: "rdead", RunCreatedAt: created, Pool: "sim", Runner: "sim",
			Status: status, Attempt: attempt, StartedAt: created, FinishedAt: created.Add(time.Second),
			Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 2, LoopCount: 4, WarmupCount: 4, DataFormat: "bfloat16"}}
		if class != "" {
			r.Error = &protocol.ResultError{Class: class, Message: "the last of 4 attempts"}
		}
		return r
	}
	exists := func(err error) bool { return errors.Is(err, storage.ErrExists) }
	dead := result("jdead", 4, protocol.StatusError, protocol.ClassDeadLetter)
	if _, err := storage.Deliver(ctx, b, dead, nil); err != nil {
		t.Fatal(err)
	}
	// Written once: the same dead letter again, or an attempt not later.
	if _, err := storage.Deliver(ctx, b, result("jdead", 4, protocol.StatusError, protocol.ClassDeadLetter), nil); !exists(err) {
		t.Fatalf("second dead letter's result of attempt 4: %v, want ErrExists", err)
	}
	if _, err := storage.Deliver(ctx, b, result("jdead", 3, protocol.StatusPassed, ""), nil); !exists(err) {
		t.Fatalf("an earlier attempt's result: %v, want ErrExists", err)
	}
	// Any other result is final, whatever follows.
	if _, err := storage.Deliver(ctx, b, result("jinfra", 1, protocol.StatusError, protocol.ClassInfra), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Deliver(ctx, b, result("jinfra", 2, protocol.StatusPassed, ""), nil); !exists(err) {
		t.Fatalf("replacing a final result: %v, want ErrExists", err)
	}
	// Compact the date: the part covers the dead letter's result.
	if _, err := index.Compact(ctx, b, index.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if rs, _, err := index.Query(ctx, b, index.Filter{Status: protocol.StatusError}); err != nil || len(rs) != 2 {
		t.Fatalf("errors before the retry: %d, %v; want 2", len(rs), err)
	}
	// The re-queued job's attempt 5 passes: it replaces the dead letter's.
	if _, err := storage.Deliver(ctx, b, result("jdead", 5, protocol.StatusPassed, ""), nil); err != nil {
		t.Fatalf("a later attempt over a dead letter's result: %v", err)
	}
	r, err := storage.ReadResult(ctx, b, storage.ResultKey(created, "rdead", "jdead"))
	if err != nil || r.Status != protocol.StatusPassed || r.Attempt != 5 {
		t.Fatalf("stored: %+v, %v; want attempt 5 passed", r, err)
	}
	rs, _, err := index.Query(ctx, b, index.Filter{Run: "rdead"})
	if err != nil || len(rs) != 2 {
		t.Fatalf("query: %d results, %v", len(rs), err)
	}
	for _, r := range rs {
		if r.Job == "jdead" && (r.Status != protocol.StatusPassed || r.Attempt != 5) {
			t.Errorf("query answers with the replaced result: %+v", r)
		}
	}
	// And after the next compaction too.
	if _, err := index.Compact(ctx, b, index.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if rs, _, err := index.Query(ctx, b, index.Filter{Status: protocol.StatusError}); err != nil || len(rs) != 1 || rs[0].Job != "jinfra" {
		t.Fatalf("errors after compacting again: %+v, %v; want jinfra only", rs, err)
	}
}
