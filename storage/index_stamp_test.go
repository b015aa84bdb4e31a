package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// settle backdates every run folder of the store, as if the last write was
// an hour ago.
func settle(t *testing.T, b *FileBucket) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(filepath.Join(b.Root(), "results"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A settled, compacted partition is answered from its part alone; a result
// written later into that date (an existing run, or a new one) changes the
// partition's stamp, and the query lists the date and returns it.
func TestQueryStampedPartitions(t *testing.T) {
	t.Parallel()
	b, o := newSynthStore(t, 200, 5)
	// Fresh writes are not settled: compact records no stamp yet.
	mustCompact(t, b, CompactOptions{})
	for _, k := range indexKeys(t, b) {
		if v, err := partMetadata(t.Context(), b, k, stampKey); err != nil || v != "" {
			t.Fatalf("part %s: stamp %q (%v) recorded for an unsettled partition", k, v, err)
		}
	}
	settle(t, b)
	cst := mustCompact(t, b, CompactOptions{})
	if cst.Restamped != 5 || cst.Written != 0 {
		t.Fatalf("compact after settling: %+v, want the 5 parts rewritten with their stamps (restamped)", cst)
	}
	if cst := mustCompact(t, b, CompactOptions{}); cst.Written != 0 || cst.Current != 5 {
		t.Fatalf("compact again: %+v, want nothing to do", cst)
	}
	f := Filter{}
	want, _, _ := QueryJSON(t.Context(), b, f)
	got, st, err := Query(t.Context(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if st.IndexPartitions != 5 || st.JSONRead != 0 {
		t.Fatalf("stats %+v: want every partition from its stamped part", st)
	}

	// A late result in an existing run of a compacted date.
	late := SynthResult(3, o)
	late.Job = "jlate"
	if _, err := PutResult(t.Context(), b, late); err != nil {
		t.Fatal(err)
	}
	// And one in a new run of another compacted date.
	fresh := SynthResult(7, o)
	fresh.Job, fresh.Run = "jfresh", "late-run"
	if _, err := PutResult(t.Context(), b, fresh); err != nil {
		t.Fatal(err)
	}
	want, _, _ = QueryJSON(t.Context(), b, f)
	got, st, err = Query(t.Context(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	for _, job := range []string{"jlate", "jfresh"} {
		if !slices.ContainsFunc(got, func(r *protocol.Result) bool { return r.Job == job }) {
			t.Fatalf("late result %s missing", job)
		}
	}
	if st.JSONRead != 2 {
		t.Fatalf("stats %+v: want exactly the two late results read from JSON", st)
	}
}
