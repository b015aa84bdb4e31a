package index_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/s3"
)

// On S3 a query over compacted dates costs the same number of requests
// however many results the dates hold: per date one listing of its
// index folder and one read of its part, plus the folder listings; a late
// result adds its one read, not a listing. The JSON scan's requests grow
// with the results.
func TestS3QueryRequestsIndependentOfResults(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	end := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	f := index.Filter{Model: "resnet50", Since: end.AddDate(0, 0, -89).Truncate(24 * time.Hour)}
	measure := func(results int) (fromIndex, scan s3.RequestCounts, b *s3.Bucket) {
		b = s3test.Open(t, srv.Config(fmt.Sprintf("reqs-%d", results)))
		o := index.SynthOptions{Results: results, Days: 90, JobsPerRun: 4, End: end}
		if err := index.WriteSynth(t.Context(), b, o); err != nil {
			t.Fatal(err)
		}
		if _, err := index.Compact(t.Context(), b, index.CompactOptions{}); err != nil {
			t.Fatal(err)
		}
		before := b.Requests()
		rs, st, err := index.Query(t.Context(), b, f)
		if err != nil {
			t.Fatal(err)
		}
		fromIndex = b.Requests().Sub(before)
		if st.IndexPartitions != 90 || st.JSONRead != 0 {
			t.Fatalf("%d results: stats %+v, want 90 dates from their parts", results, st)
		}
		before = b.Requests()
		want, _, err := index.QueryJSON(t.Context(), b, f)
		if err != nil {
			t.Fatal(err)
		}
		scan = b.Requests().Sub(before)
		if len(rs) != len(want) || len(rs) == 0 {
			t.Fatalf("%d results: index %d, json %d", results, len(rs), len(want))
		}
		t.Logf("%6d results over 90 compacted days: index query %s; json scan %s", results, fromIndex, scan)
		return fromIndex, scan, b
	}
	small, smallScan, _ := measure(360)
	large, largeScan, b := measure(1440)
	if small != large {
		t.Fatalf("index query requests %s for 360 results, %s for 1440: want the same", small, large)
	}
	if small.Total() > 2+2*90 {
		t.Fatalf("index query: %s, want at most 2 folder listings and 2 requests per date", small)
	}
	if largeScan.Total() <= smallScan.Total() {
		t.Fatalf("json scan: %s vs %s, want it to grow with the results", smallScan, largeScan)
	}

	// A late result for a compacted date: one more read, no listing.
	late := index.SynthResult(5, index.SynthOptions{Results: 1440, Days: 90, JobsPerRun: 4, End: end})
	late.Job, late.Benchmark.Model = "jlate", "resnet50"
	if _, err := storage.PutResult(t.Context(), b, late); err != nil {
		t.Fatal(err)
	}
	before := b.Requests()
	rs, _, err := index.Query(t.Context(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	withLate := b.Requests().Sub(before)
	if withLate.List != large.List || withLate.Get != large.Get+1 {
		t.Fatalf("with a late result: %s, want %s plus one get", withLate, large)
	}
	found := false
	for _, r := range rs {
		found = found || r.Job == "jlate"
	}
	if !found {
		t.Fatal("late result missing from the query")
	}
}
