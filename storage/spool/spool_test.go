package spool_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/rs/zerolog"
)

// switchBucket wraps a real bucket and can take it "down": every call then
// fails with ErrUnavailable, as the S3 backend reports an outage.
type switchBucket struct {
	storage.Bucket
	down  atomic.Bool
	calls atomic.Int64
}

func (s *switchBucket) check() error {
	s.calls.Add(1)
	if s.down.Load() {
		return fmt.Errorf("switch: %w", storage.ErrUnavailable)
	}
	return nil
}

func (s *switchBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.Bucket.Get(ctx, key)
}

func (s *switchBucket) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.Bucket.Put(ctx, key, r, opts...)
}

func (s *switchBucket) Exists(ctx context.Context, key string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	return s.Bucket.Exists(ctx, key)
}

func newFileBucket(t *testing.T) *file.Bucket {
	t.Helper()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newSpool(t *testing.T, dir string, b storage.Bucket) *spool.Spool {
	t.Helper()
	s, err := spool.NewWithConfig(spool.Config{
		Dir: dir, Bucket: b, Log: zerolog.New(zerolog.NewTestWriter(t)),
		RetryMin: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var runCreated = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func testResult(run, job string, attempt int) *protocol.Result {
	return &protocol.Result{
		Schema: protocol.SchemaResult, Run: run, Job: job, RunCreatedAt: runCreated,
		Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Attempt: attempt,
		Labels: map[string]string{"who": fmt.Sprintf("%s-a%d", job, attempt)},
	}
}

// artifacts writes two artifact files for job and returns them.
func artifacts(t *testing.T, job string) []storage.ArtifactFile {
	t.Helper()
	dir := t.TempDir()
	var out []storage.ArtifactFile
	for _, n := range []string{"log.txt", "report.json"} {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(job+" "+n+" "+strings.Repeat("x", 1000)), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, storage.ArtifactFile{Name: n, Path: p})
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
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

// runSpool runs s.Run until the test ends.
func runSpool(t *testing.T, s *spool.Spool) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v on shutdown", err)
		}
	})
}

// checkResults verifies that b holds exactly the results of jobs, each
// once, with its artifacts recorded once and intact.
func checkResults(t *testing.T, b storage.Bucket, run string, jobs []string, withArtifacts bool) {
	t.Helper()
	ctx := t.Context()
	var keys []string
	for k, err := range b.List(ctx, storage.PrefixResults) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if len(keys) != len(jobs) {
		t.Fatalf("store holds %d results, want %d: %q", len(keys), len(jobs), keys)
	}
	for _, job := range jobs {
		key := storage.ResultKey(runCreated, run, job)
		r, err := storage.ReadResult(ctx, b, key)
		if err != nil {
			t.Fatalf("result of %s: %v", job, err)
		}
		if !withArtifacts {
			continue
		}
		if len(r.Artifacts) != 2 {
			t.Fatalf("result of %s records %d artifacts, want 2: %+v", job, len(r.Artifacts), r.Artifacts)
		}
		for _, a := range r.Artifacts {
			rc, err := b.Get(ctx, a.Key)
			if err != nil {
				t.Fatalf("artifact %s of %s: %v", a.Name, job, err)
			}
			data, _ := io.ReadAll(rc)
			rc.Close()
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != a.SHA256 || int64(len(data)) != a.Size {
				t.Fatalf("artifact %s of %s does not match its record", a.Name, job)
			}
			if !strings.HasPrefix(string(data), job+" ") {
				t.Fatalf("artifact %s of %s holds another job's data", a.Name, job)
			}
		}
	}
}

func TestSpoolDeliversDirectly(t *testing.T) {
	t.Parallel()
	b := newFileBucket(t)
	s := newSpool(t, t.TempDir(), b)
	r := testResult("run1", "j1", 1)
	key, spooled, err := s.Deliver(t.Context(), r, artifacts(t, "j1"))
	if err != nil || spooled {
		t.Fatalf("Deliver = %q, %v, %v", key, spooled, err)
	}
	if key != storage.ResultKey(runCreated, "run1", "j1") {
		t.Fatalf("key = %q", key)
	}
	if len(r.Artifacts) != 2 {
		t.Fatalf("r.Artifacts = %+v", r.Artifacts)
	}
	checkResults(t, b, "run1", []string{"j1"}, true)

	// A second attempt of the same job finds the result: ErrExists, not spooled.
	_, spooled, err = s.Deliver(t.Context(), testResult("run1", "j1", 2), artifacts(t, "j1"))
	if !errors.Is(err, storage.ErrExists) || spooled {
		t.Fatalf("second Deliver = %v, %v; want ErrExists, not spooled", spooled, err)
	}
	if s.Pending() != 0 {
		t.Fatalf("Pending = %d", s.Pending())
	}
}

func TestSpoolRejectsUndeliverable(t *testing.T) {
	t.Parallel()
	sw := &switchBucket{Bucket: newFileBucket(t)}
	sw.down.Store(true)
	s := newSpool(t, t.TempDir(), sw)
	for name, tc := range map[string]struct {
		r     *protocol.Result
		files []storage.ArtifactFile
	}{
		"bad job id":        {testResult("run1", "../j", 1), nil},
		"bad run id":        {testResult("", "j", 1), nil},
		"bad artifact name": {testResult("run1", "j", 1), []storage.ArtifactFile{{Name: "../x", Path: "/etc/hostname"}}},
	} {
		_, spooled, err := s.Deliver(t.Context(), tc.r, tc.files)
		if !errors.Is(err, storage.ErrInvalidKey) || spooled {
			t.Errorf("%s: Deliver = %v, %v; want ErrInvalidKey, not spooled", name, spooled, err)
		}
	}
	// A missing artifact file can be neither delivered nor spooled: an
	// error, so the caller does not ack.
	_, spooled, err := s.Deliver(t.Context(), testResult("run1", "j", 1),
		[]storage.ArtifactFile{{Name: "log.txt", Path: filepath.Join(t.TempDir(), "missing")}})
	if err == nil || spooled {
		t.Errorf("missing artifact: Deliver = %v, %v; want an error", spooled, err)
	}
	if s.Pending() != 0 || sw.calls.Load() != 1 {
		t.Fatalf("Pending = %d, store calls = %d; want 0 and 1", s.Pending(), sw.calls.Load())
	}
}

func TestSpoolOutageFile(t *testing.T) {
	t.Parallel()
	sw := &switchBucket{Bucket: newFileBucket(t)}
	s := newSpool(t, t.TempDir(), sw)
	sw.down.Store(true)
	runSpool(t, s)

	var jobs []string
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range 12 {
		job := fmt.Sprintf("j%02d", i)
		jobs = append(jobs, job)
		files := artifacts(t, job)
		wg.Go(func() {
			r := testResult("run1", job, 1)
			_, spooled, err := s.Deliver(t.Context(), r, files)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || !spooled {
				t.Errorf("Deliver(%s) while down = %v, %v; want spooled", job, spooled, err)
			}
			if len(r.Artifacts) != 0 {
				t.Errorf("Deliver(%s) changed r although it spooled", job)
			}
		})
	}
	wg.Wait()
	if s.Pending() != 12 {
		t.Fatalf("Pending = %d, want 12", s.Pending())
	}
	// Run backs off while the store is down; nothing is lost meanwhile.
	before := sw.calls.Load()
	waitFor(t, 5*time.Second, "Run to retry", func() bool { return sw.calls.Load() > before+2 })
	if s.Pending() != 12 {
		t.Fatalf("Pending = %d while down, want 12", s.Pending())
	}

	sw.down.Store(false)
	waitFor(t, 10*time.Second, "the spool to drain", func() bool { return s.Pending() == 0 })
	checkResults(t, sw.Bucket, "run1", jobs, true)

	// New results go straight to the store again.
	_, spooled, err := s.Deliver(t.Context(), testResult("run1", "late", 1), nil)
	if err != nil || spooled {
		t.Fatalf("Deliver after recovery = %v, %v", spooled, err)
	}
}

// A crash leaves committed entries and maybe a half-written one; the next
// process uploads the former and ignores the latter.
func TestSpoolRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sw := &switchBucket{Bucket: newFileBucket(t)}
	sw.down.Store(true)
	first := newSpool(t, dir, sw)
	jobs := []string{"a1", "a2", "a3"}
	for _, job := range jobs {
		if _, spooled, err := first.Deliver(t.Context(), testResult("run2", job, 1), artifacts(t, job)); err != nil || !spooled {
			t.Fatalf("Deliver(%s) = %v, %v", job, spooled, err)
		}
	}
	// A crash mid-spool: an entry that never reached ready/.
	half := filepath.Join(dir, "tmp", "0000000000000000001.run2.half.a1.deadbeef")
	if err := os.MkdirAll(filepath.Join(half, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(half, "result.json"), []byte(`{"schema":"benchfleet.result/v1","run":"run2","job":"half"`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A crash mid-removal of a delivered entry.
	if err := os.MkdirAll(filepath.Join(dir, "trash", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	// The first process dies without running its uploader.

	sw.down.Store(false)
	second := newSpool(t, dir, sw)
	if second.Pending() != 3 {
		t.Fatalf("after restart Pending = %d, want 3", second.Pending())
	}
	if err := second.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if second.Pending() != 0 {
		t.Fatalf("after Flush Pending = %d", second.Pending())
	}
	checkResults(t, sw.Bucket, "run2", jobs, true)
	for _, d := range []string{"tmp", "trash", "ready"} {
		if des, _ := os.ReadDir(filepath.Join(dir, d)); len(des) != 0 {
			t.Errorf("%s/ not empty after restart and flush: %d entries", d, len(des))
		}
	}
}

// A result that reached the store while its entry stayed in the spool (a
// crash between upload and removal, or another attempt that won) is not
// written again: the entry is dropped and the stored result is unchanged.
func TestSpoolExistingResultIsDone(t *testing.T) {
	t.Parallel()
	sw := &switchBucket{Bucket: newFileBucket(t)}
	s := newSpool(t, t.TempDir(), sw)
	sw.down.Store(true)
	if _, spooled, err := s.Deliver(t.Context(), testResult("run3", "j1", 1), artifacts(t, "j1")); err != nil || !spooled {
		t.Fatalf("Deliver = %v, %v", spooled, err)
	}
	sw.down.Store(false)
	// Attempt 2 of the same job is delivered directly and wins.
	if _, spooled, err := s.Deliver(t.Context(), testResult("run3", "j1", 2), nil); err != nil || spooled {
		t.Fatalf("Deliver attempt 2 = %v, %v", spooled, err)
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.Pending() != 0 {
		t.Fatalf("Pending = %d", s.Pending())
	}
	r, err := storage.ReadResult(t.Context(), sw.Bucket, storage.ResultKey(runCreated, "run3", "j1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempt != 2 || len(r.Artifacts) != 0 {
		t.Fatalf("stored result changed: attempt %d, %d artifacts", r.Attempt, len(r.Artifacts))
	}
}

// An entry that cannot be read back is moved aside, never deleted, and does
// not block the others.
func TestSpoolCorruptEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sw := &switchBucket{Bucket: newFileBucket(t)}
	sw.down.Store(true)
	s := newSpool(t, dir, sw)
	for _, job := range []string{"c1", "c2"} {
		if _, spooled, err := s.Deliver(t.Context(), testResult("run4", job, 1), nil); err != nil || !spooled {
			t.Fatalf("Deliver = %v, %v", spooled, err)
		}
	}
	ready, _ := os.ReadDir(filepath.Join(dir, "ready"))
	if len(ready) != 2 {
		t.Fatalf("%d ready entries", len(ready))
	}
	if err := os.WriteFile(filepath.Join(dir, "ready", ready[0].Name(), "result.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	sw.down.Store(false)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.Pending() != 0 {
		t.Fatalf("Pending = %d", s.Pending())
	}
	if _, err := os.Stat(filepath.Join(dir, "failed", ready[0].Name(), "result.json")); err != nil {
		t.Fatalf("corrupt entry not kept in failed/: %v", err)
	}
	checkResults(t, sw.Bucket, "run4", []string{"c2"}, false)
}

// The real outage: VersityGW is stopped, results spool, the server comes
// back, and every result lands exactly once.
func TestSpoolOutageS3(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	b := s3test.Open(t, srv.Config("spool"))
	s := newSpool(t, t.TempDir(), b)
	runSpool(t, s)

	ctx := t.Context()
	if _, spooled, err := s.Deliver(ctx, testResult("run5", "before", 1), artifacts(t, "before")); err != nil || spooled {
		t.Fatalf("Deliver while up = %v, %v", spooled, err)
	}
	srv.Stop()
	jobs := []string{"before"}
	for i := range 5 {
		job := fmt.Sprintf("down%d", i)
		jobs = append(jobs, job)
		if _, spooled, err := s.Deliver(ctx, testResult("run5", job, 1), artifacts(t, job)); err != nil || !spooled {
			t.Fatalf("Deliver(%s) while down = %v, %v; want spooled", job, spooled, err)
		}
	}
	// A second attempt of a spooled job, also while down: two entries, one result.
	if _, spooled, err := s.Deliver(ctx, testResult("run5", "down0", 2), artifacts(t, "down0")); err != nil || !spooled {
		t.Fatalf("Deliver(down0 attempt 2) = %v, %v", spooled, err)
	}
	if s.Pending() != 6 {
		t.Fatalf("Pending = %d, want 6", s.Pending())
	}
	srv.Start()
	waitFor(t, 20*time.Second, "the spool to drain into VersityGW", func() bool { return s.Pending() == 0 })
	checkResults(t, b, "run5", jobs, true)
	r, err := storage.ReadResult(ctx, b, storage.ResultKey(runCreated, "run5", "down0"))
	if err != nil || r.Attempt != 1 {
		t.Fatalf("down0: the first spooled attempt should win: %+v, %v", r, err)
	}
}

// Only the worker may write the spool: an entry dropped into ready/ would
// be uploaded with the worker's credentials. Folders made with a wider
// mode are narrowed when the spool opens.
func TestSpoolIsPrivateToTheWorker(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(filepath.Join(dir, "ready"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "ready"), 0o777); err != nil {
		t.Fatal(err)
	}
	b, err := file.NewBucket(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	newSpool(t, dir, b)
	for _, d := range []string{dir, filepath.Join(dir, "ready"), b.Root()} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", d, st.Mode().Perm())
		}
	}
}
