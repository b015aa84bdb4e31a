package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// QueryStats say how a Query was answered.
type QueryStats struct {
	// Partitions is the number of date partitions on or after Since that
	// hold results or index parts.
	Partitions int
	// IndexPartitions is the number of partitions whose index part was
	// current, so no JSON result of theirs was read.
	IndexPartitions int
	// PartsRead is the number of index part files opened.
	PartsRead int
	// IndexRows is the number of rows in the row groups scanned (after
	// statistics pruning); DocsDecoded how many of them had their doc
	// column decoded.
	IndexRows, DocsDecoded int
	// JSONRead is the number of JSON result objects read.
	JSONRead int
	// Bad is the number of JSON result objects that failed to decode and
	// were skipped (as QueryJSON counts them).
	Bad int
	// Warnings name index parts that could not be used (damaged, of an
	// unknown schema); their partitions were answered from the JSON
	// results instead. `benchfleet results compact --force` rewrites them.
	Warnings []string
}

// Query returns the results matching f, oldest run first, then by job id:
// the same rows and documents as QueryJSON, faster. It lists the date
// partitions on or after f.Since; a partition whose index part is current is
// answered from the part alone (filter columns read first, the doc column
// decoded only for matching rows); for any other partition it reads the
// part(s) it has and the JSON results they do not cover. A job found in both
// is returned once. A part that cannot be read is reported in
// QueryStats.Warnings and its partition is read from JSON: the index is a
// cache of the JSON results, never their only copy.
func Query(ctx context.Context, b storage.Bucket, f Filter) ([]*protocol.Result, QueryStats, error) {
	var st QueryStats
	since := ""
	if !f.Since.IsZero() {
		since = storage.DatePartition(f.Since)
	}
	var (
		mu   sync.Mutex
		byID = map[string]*protocol.Result{}
	)
	add := func(rs []*protocol.Result, ps partStats) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			byID[r.Job] = r
		}
		st.merge(ps)
	}
	workers := max(2*runtime.GOMAXPROCS(0), 4)
	var err error
	if fl, ok := storage.As[storage.FolderLister](b); ok {
		err = queryByDate(ctx, b, fl, since, f, workers, add, &st)
	} else {
		var parts []*partition
		parts, err = listPartitions(ctx, b, since)
		if err != nil {
			return nil, st, fmt.Errorf("storage: query: %w", err)
		}
		st.Partitions = len(parts)
		err = parallel(ctx, len(parts), workers, func(i int) error {
			rs, ps, err := queryPartition(ctx, b, parts[i], f)
			if err != nil {
				return err
			}
			add(rs, ps)
			return nil
		})
	}
	if err != nil {
		return nil, st, fmt.Errorf("storage: query: %w", err)
	}
	var out []*protocol.Result // nil when empty, as QueryJSON
	for _, r := range byID {
		out = append(out, r)
	}
	SortResults(out)
	slices.Sort(st.Warnings)
	return out, st, nil
}

// partStats are one partition's contribution to QueryStats.
type partStats struct {
	current                                  bool
	parts, rows, docs, jsonRead, bad, broken int
	warnings                                 []string
}

func (st *QueryStats) merge(ps partStats) {
	if ps.current {
		st.IndexPartitions++
	}
	st.PartsRead += ps.parts
	st.IndexRows += ps.rows
	st.DocsDecoded += ps.docs
	st.JSONRead += ps.jsonRead
	st.Bad += ps.bad
	st.Warnings = append(st.Warnings, ps.warnings...)
}

// queryByDate answers f date by date on a bucket that names its folders: a
// date whose index folder holds one sealed part and the _compacted marker is
// answered from the part and the results its late markers name, without
// listing its result keys (seal.go); any other date is listed and
// answered by queryPartition.
func queryByDate(ctx context.Context, b storage.Bucket, fl storage.FolderLister, since string, f Filter, workers int,
	add func([]*protocol.Result, partStats), st *QueryStats) error {
	dates, err := folderDates(ctx, fl, since)
	if err != nil {
		return err
	}
	st.Partitions = len(dates)
	return parallel(ctx, len(dates), workers, func(i int) error {
		date := dates[i]
		p, err := listDateIndex(ctx, b, date)
		if err != nil {
			return err
		}
		if len(p.parts) == 1 && p.compacted {
			rs, _, rows, docs, err := readPartSealed(ctx, b, p.parts[0], f, false, true)
			if err == nil {
				ps := partStats{current: true, parts: 1, rows: rows, docs: docs}
				late, ps, err := queryJSONKeys(ctx, b, p.lates, nil, f, ps)
				if err != nil {
					return err
				}
				add(append(rs, late...), ps)
				return nil
			}
			if ctx.Err() != nil {
				return err
			}
			// Not sealed, damaged or replaced: list the date's results.
		}
		for key, err := range b.List(ctx, storage.PrefixResults+"date="+date+"/") {
			if err != nil {
				return err
			}
			if d, _, _, ok := storage.ResultKeyParts(key); ok && d == date {
				p.keys = append(p.keys, key)
			}
		}
		if len(p.keys) == 0 && len(p.parts) == 0 {
			return nil
		}
		rs, pst, err := queryPartition(ctx, b, p, f)
		if err != nil {
			return err
		}
		add(rs, pst)
		return nil
	})
}

// queryPartition answers f for one date partition.
func queryPartition(ctx context.Context, b storage.Bucket, p *partition, f Filter) ([]*protocol.Result, partStats, error) {
	var ps partStats
	var out []*protocol.Result
	if p.current() {
		rs, _, rows, docs, err := readPart(ctx, b, p.parts[0], f, false)
		if err == nil {
			ps.current, ps.parts, ps.rows, ps.docs = true, 1, rows, docs
			return rs, ps, nil
		}
		if ctx.Err() != nil {
			return nil, ps, err
		}
		if !errors.Is(err, storage.ErrNotFound) { // a part replaced under us is normal
			ps.warnings = append(ps.warnings, err.Error())
		}
		return queryJSONKeys(ctx, b, p.keys, nil, f, ps)
	}
	// Stale partition: take what the parts have, read the JSON for the rest.
	covered := map[string]bool{}
	for _, key := range p.parts {
		rs, cov, rows, docs, err := readPart(ctx, b, key, f, true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ps, err
			}
			if !errors.Is(err, storage.ErrNotFound) {
				ps.warnings = append(ps.warnings, err.Error())
			}
			continue
		}
		ps.parts++
		ps.rows += rows
		ps.docs += docs
		out = append(out, rs...)
		for _, k := range cov {
			covered[k] = true
		}
	}
	rs, ps, err := queryJSONKeys(ctx, b, p.keys, covered, f, ps)
	return append(out, rs...), ps, err
}

// queryJSONKeys reads the JSON results at keys not in covered that may
// match f.
func queryJSONKeys(ctx context.Context, b storage.Bucket, keys []string, covered map[string]bool, f Filter, ps partStats) ([]*protocol.Result, partStats, error) {
	var out []*protocol.Result
	for _, key := range keys {
		if covered[key] {
			continue
		}
		date, run, job, _ := storage.ResultKeyParts(key)
		if !f.keepKey(date, run, job) {
			continue
		}
		r, err := storage.ReadResult(ctx, b, key)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		ps.jsonRead++
		if err != nil {
			if ctx.Err() != nil {
				return nil, ps, err
			}
			ps.bad++
			continue
		}
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out, ps, nil
}

// The columns Query reads besides doc.
var filterColumns = []string{"run", "job", "run_created_at", "pool", "status", "model", "commit", "branch"}

// queryColumns are the columns a query opens a part for: the filter
// columns, doc, and date (which a part must have).
var queryColumns = append(slices.Clip(filterColumns), "doc", "date")

// readPart reads the part at key and returns its rows matching f, decoded
// from the doc column. With withKeys it also returns the result keys of all
// its rows (the keys it covers). Errors name the key.
func readPart(ctx context.Context, b storage.Bucket, key string, f Filter, withKeys bool) (rs []*protocol.Result, keys []string, rows, docs int, err error) {
	return readPartSealed(ctx, b, key, f, withKeys, false)
}

// readPartSealed is readPart that first checks, with requireSeal, that the
// part is sealed; errNotSealed when it is not.
func readPartSealed(ctx context.Context, b storage.Bucket, key string, f Filter, withKeys, requireSeal bool) (rs []*protocol.Result, keys []string, rows, docs int, err error) {
	ra, size, closeFn, err := openReaderAt(ctx, b, key)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	defer closeFn()
	pf, err := openPartColumns(ra, size, queryColumns, filterColumns, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("storage: index part %q is unreadable: %w", key, err)
	}
	if v, _ := pf.Lookup("benchfleet.schema"); v != SchemaVersion {
		return nil, nil, 0, 0, fmt.Errorf("storage: index part %q has schema %q, want %q", key, v, SchemaVersion)
	}
	if requireSeal {
		if v, _ := pf.Lookup(sealKey); v != sealVersion {
			return nil, nil, 0, 0, errNotSealed
		}
	}
	col := map[string]int{}
	for _, name := range queryColumns {
		leaf, ok := pf.Schema().Lookup(name)
		if !ok {
			return nil, nil, 0, 0, fmt.Errorf("storage: index part %q has no column %q", key, name)
		}
		col[name] = leaf.ColumnIndex
	}
	var date string
	if d, _, ok := storage.IndexPartParts(key); ok {
		date = d
	}
	rs, keys, rows, docs, err = scanPart(pf, col, date, f, withKeys)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("storage: index part %q is unreadable: %w", key, err)
	}
	return rs, keys, rows, docs, nil
}

// openReaderAt opens the object at key for random access. A backend whose
// objects are seekable files (the file bucket) is read in place, so only the
// footer, the filter columns and the doc pages a query needs are read;
// others are read into memory.
func openReaderAt(ctx context.Context, b storage.Bucket, key string) (io.ReaderAt, int64, func(), error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, 0, nil, err
	}
	if f, ok := rc.(interface {
		io.ReaderAt
		Stat() (fs.FileInfo, error)
	}); ok {
		if st, err := f.Stat(); err == nil {
			return f, st.Size(), func() { rc.Close() }, nil
		}
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, 0, nil, fmt.Errorf("storage: read %q: %w", key, err)
	}
	return bytes.NewReader(buf.Bytes()), int64(buf.Len()), func() {}, nil
}

// rowTest is one filter condition on one column.
type rowTest struct {
	column string
	test   func(v parquet.Value) bool
	// eq is the value the column must equal, for row group pruning by
	// statistics; empty when the test is not an equality.
	eq string
	// minInt64 is the least value an int64 column may hold, for skipping
	// the test on a row group whose minimum passes; set when hasMin.
	minInt64 int64
	hasMin   bool
}

// passesAll reports whether a row group's statistics for the test's column
// prove that every row passes. Skipping such a test only lets more rows
// through to f.Match, which decides exactly.
func (t rowTest) passesAll(s *format.Statistics) bool {
	if s.NullCount != 0 || s.MinValue == nil || s.MaxValue == nil {
		return false
	}
	switch {
	case t.eq != "":
		return string(s.MinValue) == t.eq && string(s.MaxValue) == t.eq
	case t.hasMin:
		return len(s.MinValue) == 8 && int64(binary.LittleEndian.Uint64(s.MinValue)) >= t.minInt64
	}
	return false
}

func (f Filter) rowTests() []rowTest {
	var ts []rowTest
	eq := func(column, want string) {
		if want != "" {
			ts = append(ts, rowTest{column: column, eq: want, test: func(v parquet.Value) bool {
				return !v.IsNull() && string(v.ByteArray()) == want
			}})
		}
	}
	eq("model", f.Model)
	eq("pool", f.Pool)
	eq("branch", f.Branch)
	eq("status", string(f.Status))
	eq("run", f.Run)
	eq("job", f.Job)
	if f.Commit != "" {
		prefix := []byte(f.Commit)
		ts = append(ts, rowTest{column: "commit", test: func(v parquet.Value) bool {
			return !v.IsNull() && bytes.HasPrefix(v.ByteArray(), prefix)
		}})
	}
	if !f.Since.IsZero() {
		// The column holds microseconds, truncated: a row at or after Since
		// is at or after Since truncated. f.Match decides exactly later.
		min := f.Since.UnixMicro() - 1
		ts = append(ts, rowTest{column: "run_created_at", minInt64: min, hasMin: true, test: func(v parquet.Value) bool {
			return !v.IsNull() && v.Int64() >= min
		}})
	}
	return ts
}

// scanPart filters pf's rows by the filter columns, then decodes the doc
// column of the rows left, and checks each with f.Match.
func scanPart(pf *parquet.File, col map[string]int, date string, f Filter, withKeys bool) (rs []*protocol.Result, keys []string, rows, docs int, err error) {
	tests := f.rowTests()
	md := pf.Metadata()
	for gi, rg := range pf.RowGroups() {
		n := int(rg.NumRows())
		if !withKeys && gi < len(md.RowGroups) && prunedByStats(&md.RowGroups[gi], col, tests) {
			continue
		}
		rows += n
		keep := make([]bool, n)
		for i := range keep {
			keep[i] = true
		}
		for _, t := range tests {
			if gi < len(md.RowGroups) {
				if c := col[t.column]; c < len(md.RowGroups[gi].Columns) && t.passesAll(&md.RowGroups[gi].Columns[c].MetaData.Statistics) {
					continue
				}
			}
			err := readColumn(rg, col[t.column], func(i int, v parquet.Value) {
				if keep[i] && !t.test(v) {
					keep[i] = false
				}
			})
			if err != nil {
				return nil, nil, 0, 0, fmt.Errorf("column %s: %w", t.column, err)
			}
		}
		if withKeys {
			runs := make([]string, n)
			err := readColumn(rg, col["run"], func(i int, v parquet.Value) { runs[i] = string(v.ByteArray()) })
			if err == nil {
				err = readColumn(rg, col["job"], func(i int, v parquet.Value) {
					keys = append(keys, fmt.Sprintf("%sdate=%s/run=%s/%s.json", storage.PrefixResults, date, runs[i], v.ByteArray()))
				})
			}
			if err != nil {
				return nil, nil, 0, 0, fmt.Errorf("run/job columns: %w", err)
			}
		}
		var idx []int64
		for i, k := range keep {
			if k {
				idx = append(idx, int64(i))
			}
		}
		if len(idx) == 0 {
			continue
		}
		var decodeErr error
		err := readRows(rg, col["doc"], idx, func(v parquet.Value) {
			docs++
			r, err := protocol.DecodeCheckedResult(v.ByteArray())
			if err != nil {
				if decodeErr == nil {
					decodeErr = fmt.Errorf("doc column: %w", err)
				}
				return
			}
			if f.Match(r) {
				rs = append(rs, r)
			}
		})
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return nil, nil, 0, 0, err
		}
	}
	return rs, keys, rows, docs, nil
}

// prunedByStats reports whether a row group's min/max statistics prove that
// no row passes an equality test.
func prunedByStats(rg *format.RowGroup, col map[string]int, tests []rowTest) bool {
	for _, t := range tests {
		if t.eq == "" {
			continue
		}
		c := col[t.column]
		if c >= len(rg.Columns) {
			continue
		}
		s := rg.Columns[c].MetaData.Statistics
		if s.MinValue == nil || s.MaxValue == nil {
			continue
		}
		if t.eq < string(s.MinValue) || t.eq > string(s.MaxValue) {
			return true
		}
	}
	return false
}

// valuePool holds value buffers for readColumn and readRows.
var valuePool = sync.Pool{New: func() any { b := make([]parquet.Value, 512); return &b }}

// readColumn calls fn with the row index and value of every value of a flat
// column in rg.
func readColumn(rg parquet.RowGroup, column int, fn func(i int, v parquet.Value)) error {
	pages := rg.ColumnChunks()[column].Pages()
	defer pages.Close()
	bufp := valuePool.Get().(*[]parquet.Value)
	defer valuePool.Put(bufp)
	buf := *bufp
	row := 0
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				fn(row, v)
				row++
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return err
			}
		}
		parquet.Release(p)
	}
}

// readRows calls fn with the value of each row in idx (ascending) of a flat
// column, reading only the pages that hold them (the offset index locates
// them).
func readRows(rg parquet.RowGroup, column int, idx []int64, fn func(v parquet.Value)) error {
	chunk := rg.ColumnChunks()[column]
	// Parts are opened without their page index (most columns are read
	// whole); load it for this column so SeekToRow can jump to a page.
	_, _ = chunk.OffsetIndex()
	pages := chunk.Pages()
	defer pages.Close()
	bufp := valuePool.Get().(*[]parquet.Value)
	defer valuePool.Put(bufp)
	buf := (*bufp)[:64]
	for i := 0; i < len(idx); {
		start := idx[i]
		if err := pages.SeekToRow(start); err != nil {
			return err
		}
		p, err := pages.ReadPage()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		end := start + p.NumRows()
		vr := p.Values()
		row := start
		for i < len(idx) && idx[i] < end {
			n, err := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				if i < len(idx) && idx[i] == row {
					fn(v)
					i++
				}
				row++
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return err
			}
		}
		parquet.Release(p)
		if row == start { // an empty page: avoid looping forever
			return io.ErrUnexpectedEOF
		}
	}
	return nil
}
