package index

import (
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// countLists wraps b and counts the List calls under results/.
func countLists(b storage.Bucket) (storage.Bucket, *atomic.Int64) {
	var n atomic.Int64
	return &hookBucket{Bucket: b, onList: func(prefix string) {
		if strings.HasPrefix(prefix, storage.PrefixResults) {
			n.Add(1)
		}
	}}, &n
}

// hookBucket is a Wrapper that calls onList before each List and onPut
// before each Put (a non-nil error from onPut fails the Put).
type hookBucket struct {
	storage.Bucket
	onList func(prefix string)
	onPut  func(key string) error
}

func (h *hookBucket) Unwrap() storage.Bucket { return h.Bucket }

func (h *hookBucket) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	if h.onList != nil {
		h.onList(prefix)
	}
	return h.Bucket.List(ctx, prefix)
}

func (h *hookBucket) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	if h.onPut != nil {
		if err := h.onPut(key); err != nil {
			return err
		}
	}
	return h.Bucket.Put(ctx, key, r, opts...)
}

// A compacted date is answered from its sealed part without listing its
// results; a result written later into it (an existing run, or a new run)
// leaves a late marker, is returned at once from that marker (still without a
// listing), and the next compact folds it in and clears the marker.
func TestQuerySealedPartitions(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 200, 5)
	cst := mustCompact(t, b, CompactOptions{})
	if cst.Written != 5 || cst.Sealed != 0 {
		t.Fatalf("compact: %+v", cst)
	}
	for _, k := range indexKeys(t, b) {
		if _, kind, _ := storage.ClassifyIndexKey(k); kind != storage.IndexPart {
			continue
		}
		if ok, err := sealed(t.Context(), b, k); err != nil || !ok {
			t.Fatalf("part %s not sealed (%v)", k, err)
		}
	}
	cb, lists := countLists(b)
	f := Filter{}
	want, _, _ := QueryJSON(t.Context(), b, f)
	got, st, err := Query(t.Context(), cb, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.IndexPartitions != 5 || st.JSONRead != 0 || lists.Load() != 0 {
		t.Fatalf("stats %+v, %d result listings: want every partition from its sealed part, no listing", st, lists.Load())
	}

	late := SynthResult(3, o)
	late.Job = "jlate"
	lateKey, err := storage.PutResult(t.Context(), b, late)
	if err != nil {
		t.Fatal(err)
	}
	fresh := SynthResult(7, o)
	fresh.Job, fresh.Run = "jfresh", "late-run"
	if _, err := storage.PutResult(t.Context(), b, fresh); err != nil {
		t.Fatal(err)
	}
	marker, _ := storage.LateKey(lateKey)
	if ok, err := b.Exists(t.Context(), marker); err != nil || !ok {
		t.Fatalf("late marker %s: %v %v", marker, ok, err)
	}
	want, _, _ = QueryJSON(t.Context(), b, f)
	got, st, err = Query(t.Context(), cb, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	for _, job := range []string{"jlate", "jfresh"} {
		if !slices.ContainsFunc(got, func(r *protocol.Result) bool { return r.Job == job }) {
			t.Fatalf("late result %s missing", job)
		}
	}
	if st.JSONRead != 2 || lists.Load() != 0 {
		t.Fatalf("stats %+v, %d listings: want exactly the two late results read, no listing", st, lists.Load())
	}

	cst = mustCompact(t, b, CompactOptions{})
	if cst.Written != 1 || cst.Current != 4 || cst.LateCleared != 2 {
		t.Fatalf("compact after late results: %+v, want their date rewritten and 2 markers cleared", cst)
	}
	if ok, _ := b.Exists(t.Context(), marker); ok {
		t.Fatalf("late marker %s left after its result was compacted", marker)
	}
	got, st, err = Query(t.Context(), cb, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.JSONRead != 0 || st.IndexPartitions != 5 {
		t.Fatalf("stats %+v: want all from the parts", st)
	}
}

// The race the seal protocol closes: a result written while Compact runs,
// after it listed the date's results and before it wrote the part. The part
// does not cover it, so its late marker must: a query of the compacted date
// returns it.
func TestResultWrittenDuringCompactIsFound(t *testing.T) {
	t.Parallel()
	fb, o := newSynthStore(t, 64, 2)
	racer := SynthResult(0, o)
	racer.Job = "jracer"
	date := storage.DatePartition(racer.RunCreatedAt)
	var once sync.Once
	var putErr error
	hb := &hookBucket{Bucket: fb}
	hb.onPut = func(key string) error {
		// The part's Put comes after the listing: write the result first.
		if strings.HasPrefix(key, storage.PrefixIndex+"date="+date+"/part-") {
			once.Do(func() { _, putErr = storage.PutResult(t.Context(), fb, racer) })
		}
		return nil
	}
	mustCompact(t, hb, CompactOptions{})
	if putErr != nil {
		t.Fatal(putErr)
	}
	f := Filter{Job: "jracer"}
	got, st, err := Query(t.Context(), fb, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || st.JSONRead != 1 {
		t.Fatalf("result written during compact: got %d results, stats %+v", len(got), st)
	}
}

// A late marker that cannot be written fails PutResult (so the worker
// retries and does not ack); the retry finds the result there (ErrExists)
// and writes the marker.
func TestLateMarkerFailureFailsPutResult(t *testing.T) {
	t.Parallel()
	fb, o := newSynthStore(t, 64, 2)
	mustCompact(t, fb, CompactOptions{})
	down := errors.New("store down for markers")
	var fail atomic.Bool
	fail.Store(true)
	hb := &hookBucket{Bucket: fb, onPut: func(key string) error {
		if strings.Contains(key, "/_late/") && fail.Load() {
			return down
		}
		return nil
	}}
	r := SynthResult(1, o)
	r.Job = "jmarker"
	if _, err := storage.PutResult(t.Context(), hb, r); !errors.Is(err, down) {
		t.Fatalf("PutResult with the marker failing: %v, want the marker's error", err)
	}
	fail.Store(false)
	key, err := storage.PutResult(t.Context(), hb, r)
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("retry: %v, want ErrExists", err)
	}
	marker, _ := storage.LateKey(key)
	if ok, _ := fb.Exists(t.Context(), marker); !ok {
		t.Fatal("no late marker after the retry")
	}
	if got := mustQuery(t, fb, Filter{Job: "jmarker"}); len(got) != 1 {
		t.Fatalf("query found %d results", len(got))
	}
}

// A part written before seals existed (no seal in its metadata) is not
// trusted without a listing; the next compact seals it under the same name.
func TestUnsealedPartIsListedThenSealed(t *testing.T) {
	t.Parallel()
	b, _ := newSynthStore(t, 120, 3)
	mustCompact(t, b, CompactOptions{})
	// Rewrite every part as an older benchfleet did: no seal, no marker.
	parts, err := listPartitions(t.Context(), b, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		data, _, _, err := buildPart(t.Context(), b, p)
		if err != nil {
			t.Fatal(err)
		}
		unsealed := strings.Replace(string(data), sealKey, "benchfleet.xxxxxx", 1)
		if err := PutJSONRaw(b, p.parts[0], unsealed); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(t.Context(), storage.CompactedKey(p.date)); err != nil {
			t.Fatal(err)
		}
	}
	cb, lists := countLists(b)
	want, _, _ := QueryJSON(t.Context(), b, Filter{})
	lists.Store(0)
	sameResults(t, mustQuery(t, cb, Filter{}), want)
	if lists.Load() == 0 {
		t.Fatal("unsealed parts were trusted without listing their dates")
	}
	before := indexKeys(t, b)
	cst := mustCompact(t, b, CompactOptions{})
	if cst.Sealed != 3 || cst.Written != 0 {
		t.Fatalf("compact: %+v, want the 3 parts sealed", cst)
	}
	after := indexKeys(t, b)
	if !slices.Equal(partKeys(before), partKeys(after)) {
		t.Fatalf("sealing renamed parts: %v -> %v", before, after)
	}
	lists.Store(0)
	sameResults(t, mustQuery(t, cb, Filter{}), want)
	if lists.Load() != 0 {
		t.Fatal("sealed parts still listed")
	}
}

func partKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if _, kind, _ := storage.ClassifyIndexKey(k); kind == storage.IndexPart {
			out = append(out, k)
		}
	}
	return out
}

// PutJSONRaw overwrites key with data (a test helper).
func PutJSONRaw(b storage.Bucket, key, data string) error {
	return b.Put(context.Background(), key, strings.NewReader(data))
}
