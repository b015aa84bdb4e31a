package index

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

var synthEnd = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// newSynthStore is a file store holding n synthetic results over days.
func newSynthStore(t testing.TB, n, days int) (*file.Bucket, SynthOptions) {
	t.Helper()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := SynthOptions{Results: n, Days: days, JobsPerRun: 8, End: synthEnd}
	if err := WriteSynth(context.Background(), b, o); err != nil {
		t.Fatal(err)
	}
	return b, o
}

// indexKeys lists the index part keys (not the seal protocol's markers).
func indexKeys(t testing.TB, b storage.Bucket) []string {
	t.Helper()
	var keys []string
	for k, err := range b.List(context.Background(), storage.PrefixIndex) {
		if err != nil {
			t.Fatal(err)
		}
		if _, kind, _ := storage.ClassifyIndexKey(k); kind == storage.IndexPart {
			keys = append(keys, k)
		}
	}
	return keys
}

// onePart compacts a synthetic store of n results on one day and returns the
// store, its options and the bytes of its one index part.
func onePart(t testing.TB, n int) (*file.Bucket, SynthOptions, []byte) {
	t.Helper()
	b, o := newSynthStore(t, n, 1)
	mustCompact(t, b, CompactOptions{})
	parts := indexKeys(t, b)
	if len(parts) != 1 {
		t.Fatalf("parts %v, want one", parts)
	}
	data, err := getBytes(t.Context(), b, parts[0])
	if err != nil {
		t.Fatal(err)
	}
	return b, o, data
}

func mustCompact(t testing.TB, b storage.Bucket, o CompactOptions) CompactStats {
	t.Helper()
	st, err := Compact(context.Background(), b, o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// sameResults fails unless both lists hold the same documents in the same
// order.
func sameResults(t testing.TB, got, want []*protocol.Result) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("index query differs from JSON query: got %d results, want %d\n got  %.300s\n want %.300s", len(got), len(want), g, w)
	}
}

func TestCompactIdempotent(t *testing.T) {
	t.Parallel()
	b, _ := newSynthStore(t, 400, 10)
	st := mustCompact(t, b, CompactOptions{})
	if st.Partitions != 10 || st.Written != 10 || st.Rows != 400 || st.Current != 0 {
		t.Fatalf("first compact: %+v, want 10 partitions written with 400 rows", st)
	}
	before := indexKeys(t, b)
	if len(before) != 10 {
		t.Fatalf("index keys %v, want one part per date", before)
	}
	for _, k := range before {
		if _, _, ok := storage.IndexPartParts(k); !ok {
			t.Fatalf("index key %q is not a part key", k)
		}
	}
	st = mustCompact(t, b, CompactOptions{})
	if st.Written != 0 || st.Current != 10 || st.Sealed != 0 || st.Removed != 0 || st.Rows != 0 {
		t.Fatalf("second compact: %+v, want nothing written", st)
	}
	if after := indexKeys(t, b); !slices.Equal(before, after) {
		t.Fatalf("second compact changed the index: %v -> %v", before, after)
	}
	// Force rewrites the same names.
	st = mustCompact(t, b, CompactOptions{Force: true})
	if st.Written != 10 || st.Removed != 0 {
		t.Fatalf("forced compact: %+v", st)
	}
	if after := indexKeys(t, b); !slices.Equal(before, after) {
		t.Fatalf("forced compact changed the part names: %v -> %v", before, after)
	}
}

func TestQueryMatchesJSON(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 1200, 30)
	mustCompact(t, b, CompactOptions{})
	r0 := SynthResult(0, o)
	some := SynthResult(777, o)
	cases := []struct {
		name string
		f    Filter
	}{
		{"all", Filter{}},
		{"model", Filter{Model: "resnet50"}},
		{"pool", Filter{Pool: "n150"}},
		{"run", Filter{Run: some.Run}},
		{"job", Filter{Job: some.Job}},
		{"commit prefix", Filter{Commit: some.Source.Commit[:7]}},
		{"branch", Filter{Branch: "dev"}},
		{"status", Filter{Status: protocol.StatusFailed}},
		{"since date", Filter{Since: synthEnd.AddDate(0, 0, -9)}},
		{"since mid-partition", Filter{Since: some.RunCreatedAt.Add(time.Nanosecond)}},
		{"since exact", Filter{Since: r0.RunCreatedAt}},
		{"combined", Filter{Model: "resnet50", Pool: "n150", Branch: "main", Since: synthEnd.AddDate(0, 0, -20)}},
		{"nothing", Filter{Model: "no-such-model"}},
		{"future", Filter{Since: synthEnd.AddDate(1, 0, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, bad, err := QueryJSON(t.Context(), b, tc.f)
			if err != nil || bad != 0 {
				t.Fatalf("QueryJSON: %v (bad %d)", err, bad)
			}
			// Through the file bucket's folder listing, and through the
			// plain Bucket interface (date prefixes), as on S3.
			for _, bk := range []storage.Bucket{b, plainBucket{b}} {
				got, st, err := Query(t.Context(), bk, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				sameResults(t, got, want)
				if st.JSONRead != 0 || st.IndexPartitions != st.Partitions || len(st.Warnings) > 0 {
					t.Fatalf("stats %+v: want every partition answered from the index", st)
				}
			}
		})
	}
	if n := len(mustQuery(t, b, Filter{Model: "resnet50", Pool: "n150"})); n == 0 {
		t.Fatal("the synthetic history has no resnet50 on n150: the table test proves little")
	}
}

// plainBucket hides the optional interfaces of the bucket it wraps.
type plainBucket struct{ storage.Bucket }

func mustQuery(t testing.TB, b storage.Bucket, f Filter) []*protocol.Result {
	t.Helper()
	rs, st, err := Query(context.Background(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) > 0 {
		t.Fatalf("warnings: %v", st.Warnings)
	}
	return rs
}

func TestQueryWithoutIndexIsJSON(t *testing.T) {
	t.Parallel()
	b, _ := newSynthStore(t, 100, 5)
	want, _, err := QueryJSON(t.Context(), b, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := Query(t.Context(), b, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.JSONRead != 100 || st.PartsRead != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A result uploaded late (from a worker's spool) for a date that is already
// compacted must show up at once, and the next compact folds it in.
func TestQueryLateResultForCompactedDate(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 200, 5)
	mustCompact(t, b, CompactOptions{})
	late := SynthResult(3, o)
	late.Job, late.Benchmark.Model = "jlate", "resnet50"
	key, err := storage.PutResult(t.Context(), b, late)
	if err != nil {
		t.Fatal(err)
	}
	f := Filter{Model: "resnet50"}
	want, _, _ := QueryJSON(t.Context(), b, f)
	got, st, err := Query(t.Context(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if !slices.ContainsFunc(got, func(r *protocol.Result) bool { return r.Job == "jlate" }) {
		t.Fatalf("late result %s missing", key)
	}
	if st.JSONRead != 1 || st.IndexPartitions != st.Partitions {
		t.Fatalf("stats %+v: want every date from its part, and exactly the late result read from JSON (its late marker)", st)
	}

	before := indexKeys(t, b)
	cst := mustCompact(t, b, CompactOptions{})
	if cst.Written != 1 || cst.Current != 4 || cst.Removed != 1 || cst.Rows != 41 || cst.LateCleared != 1 {
		t.Fatalf("compact after a late result: %+v, want one partition rewritten", cst)
	}
	after := indexKeys(t, b)
	if len(after) != len(before) || slices.Equal(after, before) {
		t.Fatalf("index %v -> %v: want one part replaced", before, after)
	}
	got, st, err = Query(t.Context(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.JSONRead != 0 {
		t.Fatalf("stats %+v: want all from the index after compact", st)
	}
}

// A job present in a part and in JSON, or in two parts (two compactions that
// raced), is returned once.
func TestQueryDedup(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 64, 2)
	mustCompact(t, b, CompactOptions{})
	want, _, _ := QueryJSON(t.Context(), b, Filter{})
	parts := indexKeys(t, b)
	// A second part for the first date, as a racing compactor would leave.
	data, err := getBytes(t.Context(), b, parts[0])
	if err != nil {
		t.Fatal(err)
	}
	date, _, _ := storage.IndexPartParts(parts[0])
	if err := b.Put(t.Context(), storage.IndexPartKey(date, "0000000000000000"), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got, st, err := Query(t.Context(), b, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.JSONRead != 0 || st.PartsRead != 3 {
		t.Fatalf("stats %+v: want both parts read and no JSON (they cover it all)", st)
	}
	// A late result in that same partition: parts plus the one JSON.
	late := SynthResult(1, o)
	late.Job = "jlate2"
	if _, err := storage.PutResult(t.Context(), b, late); err != nil {
		t.Fatal(err)
	}
	want, _, _ = QueryJSON(t.Context(), b, Filter{})
	got, st, err = Query(t.Context(), b, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.JSONRead != 1 {
		t.Fatalf("stats %+v: want only the uncovered result read from JSON", st)
	}
	cst := mustCompact(t, b, CompactOptions{})
	if cst.Written != 1 || cst.Removed != 2 {
		t.Fatalf("compact: %+v: want the two parts merged into one", cst)
	}
	if n := len(indexKeys(t, b)); n != 2 {
		t.Fatalf("%d parts after compact, want 2", n)
	}
}

// A damaged part does not fail the query: its partition is read from JSON
// and the part is named in a warning; compact --force repairs it.
func TestQueryCorruptPartFallsBackToJSON(t *testing.T) {
	t.Parallel()
	b, _ := newSynthStore(t, 64, 2)
	mustCompact(t, b, CompactOptions{})
	parts := indexKeys(t, b)
	data, _ := getBytes(t.Context(), b, parts[1])
	for i := len(data) / 3; i < len(data)/3+64 && i < len(data); i++ {
		data[i] ^= 0x5a
	}
	data = data[:len(data)-5] // also break the footer
	if err := b.Put(t.Context(), parts[1], bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	want, _, _ := QueryJSON(t.Context(), b, Filter{})
	got, st, err := Query(t.Context(), b, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], parts[1]) {
		t.Fatalf("warnings %q: want one naming %s", st.Warnings, parts[1])
	}
	if st.JSONRead != 32 {
		t.Fatalf("stats %+v: want the damaged partition read from JSON", st)
	}
	mustCompact(t, b, CompactOptions{Force: true})
	got, st, err = Query(t.Context(), b, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if len(st.Warnings) != 0 || st.JSONRead != 0 {
		t.Fatalf("after compact --force: %+v", st)
	}
}

func TestCompactDropsPartsOfRemovedResults(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 16, 2)
	mustCompact(t, b, CompactOptions{})
	for i := range 8 { // the first run: the whole first date
		r := SynthResult(i, o)
		if err := b.Delete(t.Context(), storage.ResultKey(r.RunCreatedAt, r.Run, r.Job)); err != nil {
			t.Fatal(err)
		}
	}
	st := mustCompact(t, b, CompactOptions{})
	if st.Removed != 1 || st.Written != 0 {
		t.Fatalf("compact: %+v", st)
	}
	if n := len(indexKeys(t, b)); n != 1 {
		t.Fatalf("%d parts, want 1", n)
	}
}

func TestCompactSkipsUnreadableResults(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 16, 1)
	r := SynthResult(0, o)
	bad := storage.ResultKey(r.RunCreatedAt, r.Run, "jbroken")
	if err := b.Put(t.Context(), bad, strings.NewReader("{not json")); err != nil {
		t.Fatal(err)
	}
	st := mustCompact(t, b, CompactOptions{})
	if !slices.Equal(st.Unreadable, []string{bad}) || st.Rows != 16 {
		t.Fatalf("compact: %+v, want %s reported unreadable", st, bad)
	}
	if st := mustCompact(t, b, CompactOptions{}); st.Written != 0 {
		t.Fatalf("an unreadable result makes compact rewrite every time: %+v", st)
	}
}

func TestDatePrefixesFrom(t *testing.T) {
	t.Parallel()
	dates := []string{"0001-01-01", "1999-12-31", "2025-12-31", "2026-01-01", "2026-02-28", "2026-03-09", "2026-03-10",
		"2026-03-15", "2026-03-16", "2026-03-19", "2026-03-20", "2026-09-30", "2026-10-01", "2026-12-31", "2027-01-01",
		"2099-01-01", "2999-12-31", "9999-12-31"}
	for _, d := range dates {
		ps := datePrefixesFrom(d)
		for _, x := range dates {
			covered := 0
			for _, p := range ps {
				if strings.HasPrefix(x+"/", p) {
					covered++
				}
			}
			if want := btoi(x >= d); covered != want {
				t.Errorf("from %s: %s matched by %d prefixes of %q, want %d", d, x, covered, ps, want)
			}
		}
	}
}

func TestSinceLimitsListing(t *testing.T) {
	t.Parallel()
	b, _ := newSynthStore(t, 100, 10)
	mustCompact(t, b, CompactOptions{})
	for _, bk := range []storage.Bucket{b, plainBucket{b}} {
		_, st, err := Query(t.Context(), bk, Filter{Since: synthEnd.AddDate(0, 0, -2)})
		if err != nil {
			t.Fatal(err)
		}
		if st.Partitions != 3 {
			t.Fatalf("stats %+v: want only the 3 partitions since the date", st)
		}
	}
}

// A wrapper with Unwrap keeps the file store's fast paths (partition
// stamps, folder listing) and answers queries as the bare bucket does; a
// wrapper that hides the backend (plainBucket) loses them.
func TestWrapperKeepsIndexFastPaths(t *testing.T) {
	t.Parallel()
	b, _ := newSynthStore(t, 400, 10)
	mustCompact(t, b, CompactOptions{})
	obs := storage.Observe(storage.Observe(b, func(string, error, time.Duration) {}), func(string, error, time.Duration) {})
	if _, ok := storage.As[storage.FolderLister](obs); !ok {
		t.Fatal("folder listing not found through two wrappers")
	}
	if _, ok := storage.As[storage.FolderLister](plainBucket{b}); ok {
		t.Fatal("a wrapper without Unwrap exposes the backend's folders")
	}
	f := Filter{Model: "resnet50"}
	sameResults(t, mustQuery(t, obs, f), mustQuery(t, b, f))
}
