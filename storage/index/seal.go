package index

import (
	"bytes"
	"context"
	"errors"

	"github.com/benchfleet/benchfleet/storage"
)

// Sealed partitions. A query answers a compacted date from its one index
// part and the date's late markers, without listing the date's result keys,
// on every backend: one listing of the date's index folder and one read of
// the part, however many results the date holds (on S3 the listing of a
// year of a large farm's result keys is ~440 requests; this is 2 per date).
//
// Three kinds of objects under index/v1/date=<date>/ make it work (their
// keys are storage's layout: CompactedKey, IndexPartKey, LateKey):
//
//	_compacted                  written by Compact before it first lists the date's results
//	part-<id>.parquet           the part, sealed: key-value metadata benchfleet.sealed = v1
//	_late/<run>.<job>.json      written by PutResult for a result of a date that has _compacted
//
// storage.PutResult writes the result, then looks for _compacted; Compact writes
// _compacted, then lists the results. A result whose look came before
// _compacted existed was written before the listing began, so the part
// covers it; a result whose look came after finds _compacted and leaves a
// late marker. PutResult reports an error until the marker is written, so a
// worker retries (or spools) and acks only then. A sealed part and the
// late markers of its date therefore name every result of the date. This
// needs read-after-write consistency, which the file system, S3 (since
// 2020) and VersityGW give.
//
// Compact deletes a late marker once a part covering its result is in
// place; a marker for a covered result is harmless (Query returns a job
// once). Parts written before seals existed are not trusted this way:
// their dates are listed as before until Compact seals them (Sealed).
//
// Names starting with "_" are skipped by Spark and Hive, and a glob over
// *.parquet (DuckDB) never sees them.

const (
	// sealKey is the part metadata key of the seal; sealVersion its value.
	sealKey     = "benchfleet.sealed"
	sealVersion = "v1"
)

// errNotSealed: the part was written without a seal.
var errNotSealed = errors.New("index part is not sealed")

// ensureCompacted writes date's _compacted marker unless it is there.
func ensureCompacted(ctx context.Context, b storage.Bucket, date string) error {
	key := storage.CompactedKey(date)
	ok, err := b.Exists(ctx, key)
	if err != nil || ok {
		return err
	}
	err = b.Put(ctx, key, bytes.NewReader(nil), storage.IfAbsent(), storage.Size(0))
	if errors.Is(err, storage.ErrExists) {
		return nil
	}
	return err
}

// addIndexKey files an index key of p's date (storage.ClassifyIndexKey's answer).
func (p *partition) addIndexKey(kind storage.IndexKeyKind, key, resultKey string) {
	switch kind {
	case storage.IndexPart:
		p.parts = append(p.parts, key)
	case storage.IndexLate:
		p.lates = append(p.lates, resultKey)
	case storage.IndexCompacted:
		p.compacted = true
	}
}

// listDateIndex lists the index folder of date: the partition's parts and
// markers (its result keys are not listed).
func listDateIndex(ctx context.Context, b storage.Bucket, date string) (*partition, error) {
	p := &partition{date: date}
	for key, err := range b.List(ctx, storage.PrefixIndex+"date="+date+"/") {
		if err != nil {
			return nil, err
		}
		if d, kind, rk := storage.ClassifyIndexKey(key); d == date {
			p.addIndexKey(kind, key, rk)
		}
	}
	return p, nil
}

// clearLates deletes the late markers of p whose results p's part (covering
// exactly p.keys) now holds, and returns how many it deleted.
func clearLates(ctx context.Context, b storage.Bucket, p *partition) (int, error) {
	if len(p.lates) == 0 {
		return 0, nil
	}
	covered := make(map[string]bool, len(p.keys))
	for _, k := range p.keys {
		covered[k] = true
	}
	n := 0
	for _, rk := range p.lates {
		if !covered[rk] {
			continue // written after the listing: the next compaction folds it in
		}
		lk, _ := storage.LateKey(rk)
		if err := b.Delete(ctx, lk); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}
