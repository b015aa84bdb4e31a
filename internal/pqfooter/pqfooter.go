// Package pqfooter rewrites a Parquet file's footer (its FileMetaData, in
// thrift's compact protocol) to describe only some of the file's columns,
// so a reader that decodes the whole footer on open (parquet-go) decodes
// only what a query reads. It depends on nothing but the standard library:
// its fuzz target runs thousands of inputs a second, where inside the
// storage package's large test binary it ran a handful.
package pqfooter

import (
	"encoding/binary"
	"errors"
	"slices"
)

// Thrift compact protocol types (the encoding of Parquet's footer).
const (
	tcBoolTrue  = 1
	tcBoolFalse = 2
	tcByte      = 3
	tcI16       = 4
	tcI32       = 5
	tcI64       = 6
	tcDouble    = 7
	tcBinary    = 8
	tcList      = 9
	tcSet       = 10
	tcMap       = 11
	tcStruct    = 12
)

// Field ids of the Parquet footer structs that Project rewrites
// (parquet.thrift).
const (
	fmSchema          = 2 // FileMetaData.schema: list<SchemaElement>
	fmRowGroups       = 4 // FileMetaData.row_groups: list<RowGroup>
	fmColumnOrders    = 7 // FileMetaData.column_orders: list<ColumnOrder>
	fmEncryption      = 8 // FileMetaData.encryption_algorithm
	fmFooterSigning   = 9 // FileMetaData.footer_signing_key_metadata
	seName            = 4 // SchemaElement.name
	seNumChildren     = 5 // SchemaElement.num_children
	rgColumns         = 1 // RowGroup.columns: list<ColumnChunk>
	ccMetaData        = 3 // ColumnChunk.meta_data: ColumnMetaData
	cmKeyValue        = 8
	cmStatistics      = 12
	cmEncodingStats   = 13
	cmSizeStatistics  = 16
	cmGeospatialStats = 17
	rgSortingColumns  = 4 // RowGroup.sorting_columns (column indexes)
	thriftMaxDepth    = 32
	thriftMaxElements = 1 << 20
)

var errThrift = errors.New("malformed thrift")

// thriftReader walks thrift compact protocol bytes.
type thriftReader struct {
	b   []byte
	off int
}

func (r *thriftReader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errThrift
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *thriftReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, errThrift
	}
	r.off += n
	return v, nil
}

func (r *thriftReader) advance(n uint64) error {
	if n > uint64(len(r.b)-r.off) {
		return errThrift
	}
	r.off += int(n)
	return nil
}

// field reads a field header after the field prev; typ 0 is the struct's end.
func (r *thriftReader) field(prev int16) (id int16, typ byte, err error) {
	h, err := r.byte()
	if err != nil || h == 0 {
		return 0, 0, err
	}
	typ = h & 0x0f
	if d := h >> 4; d != 0 {
		return prev + int16(d), typ, nil
	}
	v, err := r.uvarint()
	return int16(int64(v>>1) ^ -int64(v&1)), typ, err
}

// list reads a list or set header.
func (r *thriftReader) list() (n int, elem byte, err error) {
	h, err := r.byte()
	if err != nil {
		return 0, 0, err
	}
	size := uint64(h >> 4)
	if size == 15 {
		if size, err = r.uvarint(); err != nil {
			return 0, 0, err
		}
	}
	if size > thriftMaxElements || size > uint64(len(r.b)-r.off) {
		return 0, 0, errThrift
	}
	return int(size), h & 0x0f, nil
}

// skip skips a value of type typ; elem says it is a list, set or map
// element, where a bool takes a byte of its own.
func (r *thriftReader) skip(typ byte, elem bool, depth int) error {
	if depth > thriftMaxDepth {
		return errThrift
	}
	switch typ {
	case tcBoolTrue, tcBoolFalse:
		if elem {
			return r.advance(1)
		}
		return nil
	case tcByte:
		return r.advance(1)
	case tcI16, tcI32, tcI64:
		_, err := r.uvarint()
		return err
	case tcDouble:
		return r.advance(8)
	case tcBinary:
		n, err := r.uvarint()
		if err != nil {
			return err
		}
		return r.advance(n)
	case tcList, tcSet:
		n, et, err := r.list()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skip(et, true, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tcMap:
		n, err := r.uvarint()
		if err != nil || n == 0 {
			return err
		}
		if n > thriftMaxElements {
			return errThrift
		}
		kv, err := r.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skip(kv>>4, true, depth+1); err != nil {
				return err
			}
			if err := r.skip(kv&0x0f, true, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tcStruct:
		var prev int16
		for {
			id, t, err := r.field(prev)
			if err != nil {
				return err
			}
			if t == 0 {
				return nil
			}
			if err := r.skip(t, false, depth+1); err != nil {
				return err
			}
			prev = id
		}
	}
	return errThrift
}

func appendFieldHeader(b []byte, prev, id int16, typ byte) []byte {
	if d := int(id) - int(prev); d > 0 && d <= 15 {
		return append(b, byte(d)<<4|typ)
	}
	b = append(b, typ)
	return binary.AppendUvarint(b, uint64(int64(id)<<1^int64(id)>>15))
}

func appendListHeader(b []byte, n int, elem byte) []byte {
	if n < 15 {
		return append(b, byte(n)<<4|elem)
	}
	return binary.AppendUvarint(append(b, 0xf0|elem), uint64(n))
}

// footerProjection rewrites a footer in one pass over its bytes.
type footerProjection struct {
	r       thriftReader
	columns []string
	stats   []string // columns whose min/max statistics are kept
	out     []byte
	leaves  int    // leaf columns in the schema; -1 before it is read
	keep    []bool // by leaf column
	keepSt  []bool // by leaf column: keep its statistics
	kept    int
}

// Project rewrites a Parquet FileMetaData (thrift compact) to describe
// only the leaf columns named in columns, keeping their order in the file,
// and the statistics of those in statsColumns (see openPartColumns).
// ok is false when the footer cannot be projected: it is malformed (the
// caller's open reports that), encrypted, not a flat schema, or every
// column is wanted.
func Project(footer []byte, columns, statsColumns []string) (out []byte, ok bool) {
	p := &footerProjection{r: thriftReader{b: footer}, columns: columns, stats: statsColumns, leaves: -1,
		out: make([]byte, 0, len(footer)/2)}
	if err := p.fileMetaData(); err != nil || p.leaves < 0 || p.kept == p.leaves {
		return nil, false
	}
	return p.out, true
}

var errNoProjection = errors.New("footer cannot be projected")

func (p *footerProjection) fileMetaData() error {
	r := &p.r
	var prev int16
	for {
		id, typ, err := r.field(prev)
		if err != nil {
			return err
		}
		if typ == 0 {
			p.out = append(p.out, 0)
			return nil
		}
		p.out = appendFieldHeader(p.out, prev, id, typ)
		prev = id
		switch {
		case id == fmEncryption || id == fmFooterSigning:
			return errNoProjection
		case id == fmSchema && typ == tcList:
			err = p.schema()
		case id == fmRowGroups && typ == tcList:
			err = p.structs(p.rowGroup)
		case id == fmColumnOrders && typ == tcList:
			err = p.columnList(false)
		case id == fmSchema || id == fmRowGroups || id == fmColumnOrders:
			return errNoProjection
		default:
			err = p.copyValue(typ)
		}
		if err != nil {
			return err
		}
	}
}

// copyValue copies a field's value unchanged.
func (p *footerProjection) copyValue(typ byte) error {
	start := p.r.off
	if err := p.r.skip(typ, false, 1); err != nil {
		return err
	}
	p.out = append(p.out, p.r.b[start:p.r.off]...)
	return nil
}

// schema projects list<SchemaElement>: the root, with num_children set to
// the number of columns kept, then the kept leaves.
func (p *footerProjection) schema() error {
	r := &p.r
	n, et, err := r.list()
	if err != nil {
		return err
	}
	if et != tcStruct || n == 0 {
		return errNoProjection
	}
	p.leaves = n - 1
	p.keep = make([]bool, p.leaves)
	p.keepSt = make([]bool, p.leaves)
	type field struct {
		id    int16
		typ   byte
		value []byte
	}
	var root []field
	var prev int16
	for {
		id, typ, err := r.field(prev)
		if err != nil {
			return err
		}
		if typ == 0 {
			break
		}
		start := r.off
		if err := r.skip(typ, false, 1); err != nil {
			return err
		}
		root = append(root, field{id, typ, r.b[start:r.off]})
		prev = id
	}
	leaves := make([][]byte, 0, p.leaves)
	for i := range p.leaves {
		start := r.off
		var prev int16
		for {
			id, typ, err := r.field(prev)
			if err != nil {
				return err
			}
			if typ == 0 {
				break
			}
			vstart := r.off
			if err := r.skip(typ, false, 1); err != nil {
				return err
			}
			v := r.b[vstart:r.off]
			switch {
			case id == seNumChildren && typ == tcI32 && !(len(v) == 1 && v[0] == 0):
				return errNoProjection // a group: not a flat schema
			case id == seName && typ == tcBinary:
				nr := thriftReader{b: v}
				if l, err := nr.uvarint(); err == nil && l == uint64(len(v)-nr.off) {
					name := string(v[nr.off:])
					p.keep[i] = slices.Contains(p.columns, name)
					p.keepSt[i] = slices.Contains(p.stats, name)
				}
			}
			prev = id
		}
		if p.keep[i] {
			leaves = append(leaves, r.b[start:r.off])
			p.kept++
		}
	}
	p.out = appendListHeader(p.out, p.kept+1, tcStruct)
	prev = 0
	found := false
	for _, f := range root {
		p.out = appendFieldHeader(p.out, prev, f.id, f.typ)
		if f.id == seNumChildren && f.typ == tcI32 {
			p.out = binary.AppendUvarint(p.out, uint64(p.kept)<<1) // zigzag of a non-negative int32
			found = true
		} else {
			p.out = append(p.out, f.value...)
		}
		prev = f.id
	}
	if !found {
		return errNoProjection
	}
	p.out = append(p.out, 0)
	for _, l := range leaves {
		p.out = append(p.out, l...)
	}
	return nil
}

// structs copies a list<struct>, each element written by fn.
func (p *footerProjection) structs(fn func() error) error {
	n, et, err := p.r.list()
	if err != nil {
		return err
	}
	if et != tcStruct {
		return errNoProjection
	}
	p.out = appendListHeader(p.out, n, tcStruct)
	for range n {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

// rowGroup copies a RowGroup with only the kept column chunks and without
// sorting_columns (which name column indexes).
func (p *footerProjection) rowGroup() error {
	r := &p.r
	var prev, wrote int16
	for {
		id, typ, err := r.field(prev)
		if err != nil {
			return err
		}
		if typ == 0 {
			p.out = append(p.out, 0)
			return nil
		}
		prev = id
		if id == rgSortingColumns {
			if err := r.skip(typ, false, 1); err != nil {
				return err
			}
			continue
		}
		p.out = appendFieldHeader(p.out, wrote, id, typ)
		wrote = id
		switch {
		case id == rgColumns && typ == tcList:
			err = p.columnList(true)
		case id == rgColumns:
			return errNoProjection
		default:
			err = p.copyValue(typ)
		}
		if err != nil {
			return err
		}
	}
}

// columnList copies a list with one struct per leaf column (a row group's
// ColumnChunks, the file's ColumnOrders), keeping the kept columns'.
func (p *footerProjection) columnList(chunks bool) error {
	if p.leaves < 0 {
		return errNoProjection // the schema comes first in every writer's footer
	}
	r := &p.r
	n, et, err := r.list()
	if err != nil {
		return err
	}
	if et != tcStruct || n != p.leaves {
		return errNoProjection
	}
	p.out = appendListHeader(p.out, p.kept, tcStruct)
	for i := range n {
		if chunks && p.keep[i] {
			if err := p.columnChunk(p.keepSt[i]); err != nil {
				return err
			}
			continue
		}
		start := r.off
		if err := r.skip(tcStruct, true, 1); err != nil {
			return err
		}
		if p.keep[i] {
			p.out = append(p.out, r.b[start:r.off]...)
		}
	}
	return nil
}

// columnChunk copies a ColumnChunk, its ColumnMetaData without what
// reading pages does not need (see openPartColumns).
func (p *footerProjection) columnChunk(stats bool) error {
	return p.copyStruct(func(id int16, typ byte) (bool, error) {
		if id != ccMetaData || typ != tcStruct {
			return true, nil
		}
		return true, p.copyStruct(func(id int16, _ byte) (bool, error) {
			switch id {
			case cmKeyValue, cmEncodingStats, cmSizeStatistics, cmGeospatialStats:
				return false, nil
			case cmStatistics:
				return stats, nil
			}
			return true, nil
		})
	})
}

// copyStruct copies a struct field by field: fn says whether to keep a
// field; it may also write the field's value itself (after its header) and
// then return keep and a nil error with the reader past the value, which
// copyStruct detects by the reader having moved.
func (p *footerProjection) copyStruct(fn func(id int16, typ byte) (bool, error)) error {
	r := &p.r
	var prev, wrote int16
	for {
		id, typ, err := r.field(prev)
		if err != nil {
			return err
		}
		if typ == 0 {
			p.out = append(p.out, 0)
			return nil
		}
		prev = id
		mark, start := len(p.out), r.off
		p.out = appendFieldHeader(p.out, wrote, id, typ)
		keep, err := fn(id, typ)
		if err != nil {
			return err
		}
		if !keep {
			p.out = p.out[:mark]
			if r.off == start {
				if err := r.skip(typ, false, 1); err != nil {
					return err
				}
			}
			continue
		}
		wrote = id
		if r.off == start {
			if err := p.copyValue(typ); err != nil {
				return err
			}
		}
	}
}
