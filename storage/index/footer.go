package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/benchfleet/benchfleet/internal/pqfooter"
)

// openPartColumns opens a Parquet part to read only the named columns.
//
// parquet-go decodes a file's whole footer when it opens it: the schema,
// chunk metadata and statistics of every column. For a query that reads 10
// of a part's 61 columns that decoding is most of the cost of a partition.
// So the part is shown to parquet-go
// with its footer rewritten to describe only the named columns, in their
// order in the file; the pages stay where they are (a footer's offsets are
// absolute), and column indexes refer to the projected schema. The kept
// chunks' metadata loses what reading pages does not need: the page
// encoding, size and geospatial statistics, key-value metadata, and the
// min/max statistics of columns not in statsColumns (the doc column's are
// two whole documents). Columns that
// the part lacks are simply absent (Schema().Lookup fails as it would on the
// whole file). A footer that cannot be projected (a nested schema, an
// encrypted footer, row groups whose chunks do not match the schema) is
// opened whole: the projection is an optimisation, never a different reader.
func openPartColumns(ra io.ReaderAt, size int64, columns, statsColumns []string, opts ...parquet.FileOption) (*parquet.File, error) {
	if size >= 12 {
		var tail [8]byte
		if _, err := ra.ReadAt(tail[:], size-8); err != nil {
			return nil, fmt.Errorf("reading footer length: %w", err)
		}
		n := int64(binary.LittleEndian.Uint32(tail[:4]))
		if string(tail[4:]) == "PAR1" && n > 0 && n <= size-12 {
			bufp := footerPool.Get().(*[]byte)
			defer footerPool.Put(bufp)
			footer := slices.Grow((*bufp)[:0], int(n))[:n]
			*bufp = footer
			start := size - 8 - n
			if _, err := ra.ReadAt(footer, start); err != nil {
				return nil, fmt.Errorf("reading footer: %w", err)
			}
			if proj, ok := pqfooter.Project(footer, columns, statsColumns); ok {
				proj = binary.LittleEndian.AppendUint32(proj, uint32(len(proj)))
				proj = append(proj, "PAR1"...)
				v := &footerSwap{r: ra, data: start, tail: proj}
				return parquet.OpenFile(v, start+int64(len(proj)), opts...)
			}
		}
	}
	return parquet.OpenFile(ra, size, opts...)
}

// footerPool holds the buffers footers are read into (the projection is a
// copy).
var footerPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// footerSwap is a file whose bytes from data on are tail instead: the
// original file with its footer replaced.
type footerSwap struct {
	r    io.ReaderAt
	data int64
	tail []byte
}

func (f *footerSwap) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("footerSwap: negative offset")
	}
	n := 0
	if off < f.data {
		m := int(min(int64(len(p)), f.data-off))
		k, err := f.r.ReadAt(p[:m], off)
		n += k
		if k < m {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		p, off = p[m:], off+int64(m)
	}
	if len(p) == 0 {
		return n, nil
	}
	t := off - f.data
	if t >= int64(len(f.tail)) {
		return n, io.EOF
	}
	k := copy(p, f.tail[t:])
	if n += k; k < len(p) {
		return n, io.EOF
	}
	return n, nil
}
