package pqfooter

import (
	"os"
	"path/filepath"
	"testing"
)

// The columns a history query reads (storage's queryColumns, and the
// filter columns whose statistics it keeps).
var (
	filterColumns = []string{"run", "job", "run_created_at", "pool", "status", "model", "commit", "branch"}
	queryColumns  = append(append([]string{}, filterColumns...), "doc", "date")
)

// seed is the footer of a part compacted from a synthetic store
// (testdata/part-footer.bin). storage's tests check projections against
// freshly compacted parts; this one only seeds the fuzzer.
func seed(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "part-footer.bin"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestProjectSeed(t *testing.T) {
	t.Parallel()
	footer := seed(t)
	out, ok := Project(footer, queryColumns, filterColumns)
	if !ok {
		t.Fatal("the seed footer is not projected")
	}
	if len(out) >= len(footer) {
		t.Fatalf("projected footer is %d bytes, the whole one %d: want smaller", len(out), len(footer))
	}
	r := &thriftReader{b: out}
	if err := r.skip(tcStruct, false, 0); err != nil || r.off != len(out) {
		t.Fatalf("projected footer is malformed (%v) or has %d trailing bytes", err, len(out)-r.off)
	}
}

// FuzzProject feeds Project damaged footers: it must not panic, and what it
// projects must be one well-formed thrift struct.
func FuzzProject(f *testing.F) {
	f.Add(seed(f))
	f.Fuzz(func(t *testing.T, footer []byte) {
		out, ok := Project(footer, queryColumns, filterColumns)
		if !ok {
			return
		}
		r := &thriftReader{b: out}
		if err := r.skip(tcStruct, false, 0); err != nil || r.off != len(out) {
			t.Fatalf("projected footer is malformed (%v) or has %d trailing bytes", err, len(out)-r.off)
		}
	})
}
