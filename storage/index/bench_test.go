package index

import (
	"os"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage/file"
)

// benchQueryStore is a compacted 5k-result history over 365 days, or the
// store in BENCHFLEET_BENCH_STORE (a directory, e.g. one kept by
// `benchfleet bench query --keep`; its newest day must be today).
func benchQueryStore(b *testing.B) *file.Bucket {
	b.Helper()
	if dir := os.Getenv("BENCHFLEET_BENCH_STORE"); dir != "" {
		fb, err := file.NewBucket(dir)
		if err != nil {
			b.Fatal(err)
		}
		benchFilter.Since = time.Now().AddDate(0, 0, -90)
		return fb
	}
	fb, err := file.NewBucket(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := WriteSynth(b.Context(), fb, SynthOptions{Results: 5000, Days: 365, End: synthEnd}); err != nil {
		b.Fatal(err)
	}
	if _, err := Compact(b.Context(), fb, CompactOptions{}); err != nil {
		b.Fatal(err)
	}
	return fb
}

var benchFilter = Filter{Model: "resnet50", Pool: "n150", Branch: "main", Since: synthEnd.AddDate(0, 0, -90)}

// BenchmarkQueryJSON and BenchmarkQueryIndex run the same history query
// (resnet50 on n150, main, last 90 days) over the raw JSON results and
// through the Parquet index; compare their ns/op.
func BenchmarkQueryJSON(b *testing.B) {
	fb := benchQueryStore(b)
	for b.Loop() {
		if _, _, err := QueryJSON(b.Context(), fb, benchFilter); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryIndex(b *testing.B) {
	fb := benchQueryStore(b)
	for b.Loop() {
		rs, st, err := Query(b.Context(), fb, benchFilter)
		if err != nil || st.JSONRead != 0 || len(rs) == 0 {
			b.Fatalf("query: %v, %d results, stats %+v", err, len(rs), st)
		}
	}
}

func BenchmarkCompactOnePartition(b *testing.B) {
	fb := benchQueryStore(b)
	since := synthEnd.Add(-time.Hour)
	for b.Loop() {
		if _, err := Compact(b.Context(), fb, CompactOptions{Since: since, Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}
