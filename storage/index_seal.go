package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/benchfleet/benchfleet/protocol"
)

// Sealed partitions. A query answers a compacted date from its one index
// part and the date's late markers, without listing the date's result keys,
// on every backend: one listing of the date's index folder and one read of
// the part, however many results the date holds (on S3 the listing of a
// year of a large farm's result keys is ~440 requests; this is 2 per date).
//
// Three kinds of objects under index/v1/date=<date>/ make it work:
//
//	_compacted                  written by Compact before it first lists the date's results
//	part-<id>.parquet           the part, sealed: key-value metadata benchfleet.sealed = v1
//	_late/<run>.<job>.json      written by PutResult for a result of a date that has _compacted
//
// PutResult writes the result, then looks for _compacted; Compact writes
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
	compactedName = "_compacted"
	lateFolder    = "_late/"
	// sealKey is the part metadata key of the seal; sealVersion its value.
	sealKey     = "benchfleet.sealed"
	sealVersion = "v1"
)

// errNotSealed: the part was written without a seal.
var errNotSealed = errors.New("index part is not sealed")

// CompactedKey is the marker Compact writes for date before it lists the
// date's results.
func CompactedKey(date string) string { return PrefixIndex + "date=" + date + "/" + compactedName }

// LateKey is the late marker of the result at resultKey (ok is false for a
// key that is not a result key): index/v1/date=<date>/_late/<run>.<job>.json.
// Run and job ids never hold a ".", so the name splits unambiguously, and
// the markers of a date share one folder (no folder per run is left behind
// when they are deleted).
func LateKey(resultKey string) (string, bool) {
	date, run, job, ok := ResultKeyParts(resultKey)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%sdate=%s/%s%s.%s.json", PrefixIndex, date, lateFolder, run, job), true
}

// lateResultKey is the result key a late marker names.
func lateResultKey(key string) (date, resultKey string, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixIndex+"date=")
	if !found {
		return "", "", false
	}
	d, rest, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	name, found := strings.CutPrefix(rest, lateFolder)
	if !found {
		return "", "", false
	}
	name, found = strings.CutSuffix(name, ".json")
	run, job, split := strings.Cut(name, ".")
	if !found || !split || protocol.ValidID("run", run) != nil || protocol.ValidID("job", job) != nil {
		return "", "", false
	}
	rk := fmt.Sprintf("%sdate=%s/run=%s/%s.json", PrefixResults, d, run, job)
	rd, _, _, ok := ResultKeyParts(rk)
	if !ok || rd != d {
		return "", "", false
	}
	return d, rk, true
}

// noteLate leaves the late marker of the result at key when its date has
// been compacted (see above). It is idempotent.
func noteLate(ctx context.Context, b Bucket, key string) error {
	date, _, _, ok := ResultKeyParts(key)
	if !ok {
		return nil
	}
	compacted, err := b.Exists(ctx, CompactedKey(date))
	if err != nil {
		return fmt.Errorf("storage: is date %s compacted: %w", date, err)
	}
	if !compacted {
		return nil
	}
	lk, _ := LateKey(key)
	if err := b.Put(ctx, lk, bytes.NewReader(nil), Size(0)); err != nil {
		return fmt.Errorf("storage: late marker of %s: %w", key, err)
	}
	return nil
}

// ensureCompacted writes date's _compacted marker unless it is there.
func ensureCompacted(ctx context.Context, b Bucket, date string) error {
	key := CompactedKey(date)
	ok, err := b.Exists(ctx, key)
	if err != nil || ok {
		return err
	}
	err = b.Put(ctx, key, bytes.NewReader(nil), IfAbsent(), Size(0))
	if errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// indexEntry classifies a key under index/v1/: a part, a late marker or the
// _compacted marker of date. Other keys have kind 0.
type indexKind int

const (
	indexOther indexKind = iota
	indexPart
	indexLate
	indexCompacted
)

func classifyIndexKey(key string) (date string, kind indexKind, resultKey string) {
	if d, _, ok := indexPartParts(key); ok {
		return d, indexPart, ""
	}
	if d, rk, ok := lateResultKey(key); ok {
		return d, indexLate, rk
	}
	if rest, ok := strings.CutPrefix(key, PrefixIndex+"date="); ok {
		if d, name, ok := strings.Cut(rest, "/"); ok && name == compactedName {
			return d, indexCompacted, ""
		}
	}
	return "", indexOther, ""
}

// addIndexKey files an index key of p's date (classifyIndexKey's answer).
func (p *partition) addIndexKey(kind indexKind, key, resultKey string) {
	switch kind {
	case indexPart:
		p.parts = append(p.parts, key)
	case indexLate:
		p.lates = append(p.lates, resultKey)
	case indexCompacted:
		p.compacted = true
	}
}

// listDateIndex lists the index folder of date: the partition's parts and
// markers (its result keys are not listed).
func listDateIndex(ctx context.Context, b Bucket, date string) (*partition, error) {
	p := &partition{date: date}
	for key, err := range b.List(ctx, PrefixIndex+"date="+date+"/") {
		if err != nil {
			return nil, err
		}
		if d, kind, rk := classifyIndexKey(key); d == date {
			p.addIndexKey(kind, key, rk)
		}
	}
	return p, nil
}

// clearLates deletes the late markers of p whose results p's part (covering
// exactly p.keys) now holds, and returns how many it deleted.
func clearLates(ctx context.Context, b Bucket, p *partition) (int, error) {
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
		lk, _ := LateKey(rk)
		if err := b.Delete(ctx, lk); err != nil && !errors.Is(err, ErrNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}
