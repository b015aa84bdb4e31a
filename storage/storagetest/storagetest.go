// Package storagetest is the conformance suite of storage.Bucket: every
// backend and every wrapper runs it, so they all keep the same contract.
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage"
)

// Options tune the suite to a backend.
type Options struct {
	// LargeSize is the size of the object of the large-object test; make it
	// larger than the backend's multipart threshold so that path runs.
	// Default 11 MiB + 17 bytes (three parts at S3's 5 MiB minimum).
	LargeSize int64
	// Racers is the number of concurrent IfAbsent writers of one key.
	// Default 8.
	Racers int
}

// Run runs the whole suite with default Options. newBucket returns a fresh,
// empty bucket for each subtest; it registers its own cleanup.
func Run(t *testing.T, newBucket func(t *testing.T) storage.Bucket) {
	RunWith(t, newBucket, Options{})
}

// RunWith runs the whole suite with opts.
func RunWith(t *testing.T, newBucket func(t *testing.T) storage.Bucket, opts Options) {
	if opts.LargeSize <= 0 {
		opts.LargeSize = 11<<20 + 17
	}
	if opts.Racers <= 0 {
		opts.Racers = 8
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, b storage.Bucket)
	}{
		{"PutGet", testPutGet},
		{"GetMissing", testGetMissing},
		{"Overwrite", testOverwrite},
		{"IfAbsent", testIfAbsent},
		{"IfAbsentRace", func(t *testing.T, b storage.Bucket) { testIfAbsentRace(t, b, opts.Racers) }},
		{"Exists", testExists},
		{"Attributes", testAttributes},
		{"Delete", testDelete},
		{"List", testList},
		{"ListEmpty", testListEmpty},
		{"ListEarlyStop", testListEarlyStop},
		{"InvalidKeys", testInvalidKeys},
		{"EmptyObject", testEmptyObject},
		{"UnknownSize", testUnknownSize},
		{"Large", func(t *testing.T, b storage.Bucket) { testLarge(t, b, opts.LargeSize) }},
		{"LargeIfAbsent", func(t *testing.T, b storage.Bucket) { testLargeIfAbsent(t, b, opts.LargeSize) }},
		{"CancelledContext", testCancelled},
		{"ReaderError", testReaderError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBucket(t)
			tc.fn(t, b)
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// put stores data at key and fails the test on error.
func put(t *testing.T, b storage.Bucket, key string, data []byte, opts ...storage.PutOption) {
	t.Helper()
	opts = append(opts, storage.Size(int64(len(data))))
	if err := b.Put(ctxFor(t), key, bytes.NewReader(data), opts...); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// get reads key and fails the test on error.
func get(t *testing.T, b storage.Bucket, key string) []byte {
	t.Helper()
	rc, err := b.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return data
}

// list collects the keys under prefix and fails the test on error.
func list(t *testing.T, b storage.Bucket, prefix string) []string {
	t.Helper()
	keys := []string{}
	for k, err := range b.List(ctxFor(t), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		keys = append(keys, k)
	}
	return keys
}

func randomBytes(t *testing.T, n int64) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func testPutGet(t *testing.T, b storage.Bucket) {
	data := []byte(`{"hello":"world"}`)
	put(t, b, "results/v1/date=2026-01-02/run=r1/j1.json", data, storage.ContentType("application/json"))
	if got := get(t, b, "results/v1/date=2026-01-02/run=r1/j1.json"); !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, want %q", got, data)
	}
	// Keys with spaces, unicode, '=' and '+' survive the round trip.
	for _, k := range []string{"odd/a b+c=d.txt", "odd/ünïcødé", "odd/q?x&y#z", "top"} {
		put(t, b, k, []byte(k))
		if got := get(t, b, k); string(got) != k {
			t.Fatalf("Get(%q) = %q", k, got)
		}
	}
}

func testGetMissing(t *testing.T, b storage.Bucket) {
	ctx := ctxFor(t)
	_, err := b.Get(ctx, "missing/object")
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get(missing) error = %v, want ErrNotFound", err)
	}
	if _, err := b.Attributes(ctx, "missing/object"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Attributes(missing) error = %v, want ErrNotFound", err)
	}
	// A missing key under an existing "folder" is missing too.
	put(t, b, "dir/present", []byte("x"))
	if _, err := b.Get(ctx, "dir/absent"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get(dir/absent) error = %v, want ErrNotFound", err)
	}
	// A "folder" is not an object.
	if _, err := b.Get(ctx, "dir"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get(dir) error = %v, want ErrNotFound", err)
	}
	if ok, err := b.Exists(ctx, "dir"); err != nil || ok {
		t.Fatalf("Exists(dir) = %v, %v; want false, nil", ok, err)
	}
}

func testOverwrite(t *testing.T, b storage.Bucket) {
	put(t, b, "k", []byte("one"))
	put(t, b, "k", []byte("two, longer"))
	if got := get(t, b, "k"); string(got) != "two, longer" {
		t.Fatalf("after overwrite Get = %q", got)
	}
}

func testIfAbsent(t *testing.T, b storage.Bucket) {
	ctx := ctxFor(t)
	put(t, b, "once/r.json", []byte("first"), storage.IfAbsent())
	err := b.Put(ctx, "once/r.json", strings.NewReader("second"), storage.IfAbsent(), storage.Size(6))
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second IfAbsent Put error = %v, want ErrExists", err)
	}
	if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ErrExists also matches another sentinel: %v", err)
	}
	if got := get(t, b, "once/r.json"); string(got) != "first" {
		t.Fatalf("content after refused Put = %q, want %q", got, "first")
	}
	// IfAbsent on a fresh key succeeds even with a sibling present.
	put(t, b, "once/s.json", []byte("other"), storage.IfAbsent())
}

func testIfAbsentRace(t *testing.T, b storage.Bucket, racers int) {
	ctx := ctxFor(t)
	for round := range 3 {
		key := fmt.Sprintf("race/%d.json", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, racers)
		for i := range racers {
			wg.Go(func() {
				<-start
				data := fmt.Sprintf("writer-%02d", i)
				errs[i] = b.Put(ctx, key, strings.NewReader(data), storage.IfAbsent(), storage.Size(int64(len(data))))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: writers %d and %d both won", round, winner, i)
				}
				winner = i
			case errors.Is(err, storage.ErrExists):
			default:
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", round)
		}
		if got, want := string(get(t, b, key)), fmt.Sprintf("writer-%02d", winner); got != want {
			t.Fatalf("round %d: content %q, want the winner's %q", round, got, want)
		}
	}
}

func testExists(t *testing.T, b storage.Bucket) {
	ctx := ctxFor(t)
	if ok, err := b.Exists(ctx, "e/x"); err != nil || ok {
		t.Fatalf("Exists(missing) = %v, %v", ok, err)
	}
	put(t, b, "e/x", []byte("1"))
	if ok, err := b.Exists(ctx, "e/x"); err != nil || !ok {
		t.Fatalf("Exists(present) = %v, %v", ok, err)
	}
	if ok, err := b.Exists(ctx, "e/x2"); err != nil || ok {
		t.Fatalf("Exists(e/x2) = %v, %v; a prefix of a key is not the key", ok, err)
	}
}

func testAttributes(t *testing.T, b storage.Bucket) {
	before := time.Now().Add(-2 * time.Minute)
	data := randomBytes(t, 12345)
	put(t, b, "attr/obj", data)
	a, err := b.Attributes(ctxFor(t), "attr/obj")
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != int64(len(data)) {
		t.Fatalf("Size = %d, want %d", a.Size, len(data))
	}
	if a.LastModified.Before(before) || a.LastModified.After(time.Now().Add(2*time.Minute)) {
		t.Fatalf("LastModified = %v, not near now", a.LastModified)
	}
}

func testDelete(t *testing.T, b storage.Bucket) {
	ctx := ctxFor(t)
	put(t, b, "del/a", []byte("a"))
	put(t, b, "del/b", []byte("b"))
	if err := b.Delete(ctx, "del/a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Exists(ctx, "del/a"); ok {
		t.Fatal("deleted key still exists")
	}
	if _, err := b.Get(ctx, "del/a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get(deleted) = %v, want ErrNotFound", err)
	}
	// Idempotent: deleting again, or a key that never was, is no error.
	if err := b.Delete(ctx, "del/a"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if err := b.Delete(ctx, "never/was/here"); err != nil {
		t.Fatalf("Delete(missing): %v", err)
	}
	if got := list(t, b, "del/"); !slices.Equal(got, []string{"del/b"}) {
		t.Fatalf("List after delete = %q", got)
	}
	// A deleted key can be created again, also conditionally.
	put(t, b, "del/a", []byte("again"), storage.IfAbsent())
}

func testList(t *testing.T, b storage.Bucket) {
	// Keys chosen so that directory-walk order and byte order differ:
	// "a/b-c" < "a/b.d" < "a/b/c" < "a/bc" in byte order.
	keys := []string{
		"a/b/c", "a/bc", "a/b-c", "a/b.d", "a/b/d/e", "a/c", "ab", "b/x",
		"results/v1/date=2026-01-01/run=r1/j1.json",
		"results/v1/date=2026-01-02/run=r2/j1.json",
		"results/v1/date=2026-01-02/run=r2/j2.json",
	}
	for _, k := range keys {
		put(t, b, k, []byte(k))
	}
	sorted := slices.Clone(keys)
	sort.Strings(sorted)
	filter := func(p string) []string {
		out := []string{}
		for _, k := range sorted {
			if strings.HasPrefix(k, p) {
				out = append(out, k)
			}
		}
		return out
	}
	for _, p := range []string{
		"", "a", "a/", "a/b", "a/b/", "a/b/d", "ab", "b/", "c", "zzz",
		"results/v1/", "results/v1/date=2026-01-02/", "results/v1/date=2026-01-0",
	} {
		if got, want := list(t, b, p), filter(p); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q\nwant %q", p, got, want)
		}
	}
}

func testListEmpty(t *testing.T, b storage.Bucket) {
	if got := list(t, b, ""); len(got) != 0 {
		t.Fatalf("List of an empty bucket = %q", got)
	}
	if got := list(t, b, "nothing/here/"); len(got) != 0 {
		t.Fatalf("List(nothing/here/) = %q", got)
	}
}

func testListEarlyStop(t *testing.T, b storage.Bucket) {
	for i := range 5 {
		put(t, b, fmt.Sprintf("stop/%d", i), []byte("x"))
	}
	n := 0
	for _, err := range b.List(ctxFor(t), "stop/") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("early stop: saw %d keys", n)
	}
}

func testInvalidKeys(t *testing.T, b storage.Bucket) {
	ctx := ctxFor(t)
	for _, k := range []string{"", "/abs", "../escape", "a/../../b", "a//b", "a/./b", "a/", ".", "..", "back\\slash", "nul\x00"} {
		if err := b.Put(ctx, k, strings.NewReader("x")); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Put(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.Get(ctx, k); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Get(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.Exists(ctx, k); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Exists(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.Attributes(ctx, k); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Attributes(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if err := b.Delete(ctx, k); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Delete(%q) error = %v, want ErrInvalidKey", k, err)
		}
	}
	if got := list(t, b, ""); len(got) != 0 {
		t.Fatalf("invalid puts left objects: %q", got)
	}
}

func testEmptyObject(t *testing.T, b storage.Bucket) {
	put(t, b, "empty/obj", nil, storage.IfAbsent())
	if got := get(t, b, "empty/obj"); len(got) != 0 {
		t.Fatalf("Get(empty) = %d bytes", len(got))
	}
	a, err := b.Attributes(ctxFor(t), "empty/obj")
	if err != nil || a.Size != 0 {
		t.Fatalf("Attributes(empty) = %+v, %v", a, err)
	}
}

// onlyReader hides every interface but io.Reader (no Len, no Seek).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func testUnknownSize(t *testing.T, b storage.Bucket) {
	data := randomBytes(t, 300_000)
	if err := b.Put(ctxFor(t), "unknown/size", onlyReader{bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, "unknown/size"); !bytes.Equal(got, data) {
		t.Fatalf("unknown-size round trip: got %d bytes, want %d", len(got), len(data))
	}
}

func testLarge(t *testing.T, b storage.Bucket, size int64) {
	data := randomBytes(t, size)
	// Known size.
	put(t, b, "large/known", data)
	if got := get(t, b, "large/known"); !bytes.Equal(got, data) {
		t.Fatalf("large known-size round trip: got %d bytes, want %d", len(got), len(data))
	}
	// Unknown size, through a plain reader.
	if err := b.Put(ctxFor(t), "large/unknown", onlyReader{bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, "large/unknown"); !bytes.Equal(got, data) {
		t.Fatalf("large unknown-size round trip: got %d bytes, want %d", len(got), len(data))
	}
	a, err := b.Attributes(ctxFor(t), "large/unknown")
	if err != nil || a.Size != size {
		t.Fatalf("Attributes(large) = %+v, %v; want size %d", a, err, size)
	}
}

func testLargeIfAbsent(t *testing.T, b storage.Bucket, size int64) {
	ctx := ctxFor(t)
	first := randomBytes(t, size)
	second := randomBytes(t, size)
	put(t, b, "large/once", first, storage.IfAbsent())
	err := b.Put(ctx, "large/once", onlyReader{bytes.NewReader(second)}, storage.IfAbsent())
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second large IfAbsent Put error = %v, want ErrExists", err)
	}
	if got := get(t, b, "large/once"); !bytes.Equal(got, first) {
		t.Fatal("large object changed by a refused IfAbsent Put")
	}
}

func testCancelled(t *testing.T, b storage.Bucket) {
	put(t, b, "c/present", []byte("x"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Put(ctx, "c/new", strings.NewReader("x"), storage.Size(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Put(cancelled) error = %v, want context.Canceled", err)
	}
	// Reads of a local backend may finish before they look at ctx; a
	// backend that reports the cancellation must report it as such.
	if rc, err := b.Get(ctx, "c/present"); err == nil {
		rc.Close()
	} else if !errors.Is(err, context.Canceled) {
		t.Errorf("Get(cancelled) error = %v, want context.Canceled", err)
	}
	if _, err := b.Exists(ctx, "c/present"); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Exists(cancelled) error = %v, want context.Canceled", err)
	}
	for k, err := range b.List(ctx, "c/") {
		if err == nil {
			t.Errorf("List(cancelled) yielded %q without error", k)
		} else if !errors.Is(err, context.Canceled) {
			t.Errorf("List(cancelled) error = %v, want context.Canceled", err)
		}
		break
	}
	if ok, _ := b.Exists(t.Context(), "c/new"); ok {
		t.Error("a cancelled Put stored the object")
	}
	// A Put cancelled while its reader is being consumed stores nothing.
	ctx2, cancel2 := context.WithCancel(t.Context())
	r := &cancelAfter{r: bytes.NewReader(randomBytes(t, 1<<20)), n: 64 << 10, cancel: cancel2}
	if err := b.Put(ctx2, "c/mid", r); err == nil {
		t.Error("Put cancelled mid-stream succeeded")
	}
	if ok, _ := b.Exists(t.Context(), "c/mid"); ok {
		t.Error("a Put cancelled mid-stream stored the object")
	}
}

// cancelAfter cancels a ctx after n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	p = p[:min(len(p), 4096)]
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

// failingReader fails after some bytes.
type failingReader struct{ n int }

var errReader = errors.New("reader broke")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errReader
	}
	n := min(len(p), f.n)
	clear(p[:n])
	f.n -= n
	return n, nil
}

func testReaderError(t *testing.T, b storage.Bucket) {
	err := b.Put(ctxFor(t), "broken/obj", &failingReader{n: 1000})
	if !errors.Is(err, errReader) {
		t.Fatalf("Put with a failing reader: error = %v, want it wrapped", err)
	}
	if ok, _ := b.Exists(ctxFor(t), "broken/obj"); ok {
		t.Fatal("a Put whose reader failed stored the object")
	}
}
