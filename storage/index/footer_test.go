package index

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/benchfleet/benchfleet/internal/pqfooter"
)

// TestOpenPartColumns opens a compacted part with its footer projected to a
// few columns and checks it against the whole file: the projected schema
// holds exactly the named columns in file order, with the same row groups,
// key-value metadata and values, and the statistics asked for.
func TestOpenPartColumns(t *testing.T) {
	t.Parallel()
	_, _, data := onePart(t, 300)
	opts := []parquet.FileOption{parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true)}
	whole, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Asked in another order, with a column the part lacks.
	cols := []string{"doc", "model", "no_such_column", "run", "run_created_at"}
	stats := []string{"model", "run"}
	proj, err := openPartColumns(bytes.NewReader(data), int64(len(data)), cols, stats, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range proj.Schema().Columns() {
		got = append(got, c[0])
	}
	if want := []string{"run", "run_created_at", "model", "doc"}; !slices.Equal(got, want) {
		t.Fatalf("projected columns %v, want %v", got, want)
	}
	if proj.NumRows() != whole.NumRows() || len(proj.RowGroups()) != len(whole.RowGroups()) {
		t.Fatalf("projected %d rows in %d row groups, whole %d in %d",
			proj.NumRows(), len(proj.RowGroups()), whole.NumRows(), len(whole.RowGroups()))
	}
	for _, k := range []string{"benchfleet.schema", "benchfleet.date", sealKey} {
		w, _ := whole.Lookup(k)
		if p, _ := proj.Lookup(k); p != w || w == "" {
			t.Fatalf("metadata %s: projected %q, whole %q", k, p, w)
		}
	}
	for _, name := range got {
		pl, _ := proj.Schema().Lookup(name)
		wl, _ := whole.Schema().Lookup(name)
		for gi := range whole.RowGroups() {
			ps := proj.Metadata().RowGroups[gi].Columns[pl.ColumnIndex].MetaData.Statistics
			ws := whole.Metadata().RowGroups[gi].Columns[wl.ColumnIndex].MetaData.Statistics
			if slices.Contains(stats, name) {
				if ps.MinValue == nil || !bytes.Equal(ps.MinValue, ws.MinValue) || !bytes.Equal(ps.MaxValue, ws.MaxValue) {
					t.Fatalf("column %s row group %d: statistics differ", name, gi)
				}
			} else if ps.MinValue != nil || ps.MaxValue != nil {
				t.Fatalf("column %s row group %d: statistics kept", name, gi)
			}
			var pv, wv []string
			if err := readColumn(proj.RowGroups()[gi], pl.ColumnIndex, func(_ int, v parquet.Value) { pv = append(pv, v.String()) }); err != nil {
				t.Fatalf("projected column %s: %v", name, err)
			}
			if err := readColumn(whole.RowGroups()[gi], wl.ColumnIndex, func(_ int, v parquet.Value) { wv = append(wv, v.String()) }); err != nil {
				t.Fatal(err)
			}
			if len(pv) == 0 || !slices.Equal(pv, wv) {
				t.Fatalf("column %s row group %d: %d values projected, %d whole, or they differ", name, gi, len(pv), len(wv))
			}
		}
	}
	// readRows seeks with the offset index, which lives before the footer.
	docs := 0
	dl, _ := proj.Schema().Lookup("doc")
	if err := readRows(proj.RowGroups()[0], dl.ColumnIndex, []int64{0, 150, 299}, func(parquet.Value) { docs++ }); err != nil || docs != 3 {
		t.Fatalf("readRows on the projected part: %d docs, %v", docs, err)
	}
}

// TestProjectFooterDeclines checks the footers that are opened whole.
func TestProjectFooterDeclines(t *testing.T) {
	t.Parallel()
	_, _, data := onePart(t, 20)
	n := binary.LittleEndian.Uint32(data[len(data)-8:])
	footer := data[len(data)-8-int(n) : len(data)-8]
	if _, ok := pqfooter.Project(footer, []string{"doc"}, nil); !ok {
		t.Fatal("a part's footer is not projected")
	}
	all := whole(t, data)
	if _, ok := pqfooter.Project(footer, all, nil); ok {
		t.Error("projected to every column: want the footer opened whole")
	}
	for i := range len(footer) - 1 {
		if _, ok := pqfooter.Project(footer[:i], []string{"doc"}, nil); ok {
			t.Fatalf("footer truncated to %d bytes projected", i)
		}
	}
}

func whole(t *testing.T, data []byte) []string {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range pf.Schema().Columns() {
		names = append(names, c[0])
	}
	return names
}
