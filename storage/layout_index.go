package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/benchfleet/benchfleet/protocol"
)

// The keys of the Parquet index under index/v1/ (docs/schema-parquet.md;
// the index itself is storage/index): the write path of results needs
// them too, to leave a late marker for a compacted date (PutResult) and
// to drop a date's parts when a dead letter's result is replaced
// (supersede.go). Three kinds of objects live under
// index/v1/date=<date>/:
//
//	_compacted                  written by Compact before it first lists the date's results
//	part-<id>.parquet           the date's part (IndexPartKey)
//	_late/<run>.<job>.json      written by PutResult for a result of a date that has _compacted
//
// storage/index's seal.go tells why they make a compacted date's part
// and late markers name every result of the date.

const (
	compactedName = "_compacted"
	lateFolder    = "_late/"
)

// IndexPartKey is the key of the part of date whose id is id.
func IndexPartKey(date, id string) string {
	return fmt.Sprintf("%sdate=%s/part-%s.parquet", PrefixIndex, date, id)
}

// IndexPartID names the part covering exactly keys (in any order).
func IndexPartID(keys []string) string {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	h := sha256.New()
	for _, k := range sorted {
		h.Write([]byte(k))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// IndexPartParts splits an index key into its date and part id.
func IndexPartParts(key string) (date, id string, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixIndex)
	if !found {
		return "", "", false
	}
	d, file, found := strings.Cut(rest, "/")
	if !found || !strings.HasPrefix(d, "date=") || strings.Contains(file, "/") {
		return "", "", false
	}
	id, found = strings.CutPrefix(file, "part-")
	if !found {
		return "", "", false
	}
	id, found = strings.CutSuffix(id, ".parquet")
	if !found || id == "" {
		return "", "", false
	}
	return d[5:], id, true
}

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

// IndexKeyKind says what a key under index/v1/ is (ClassifyIndexKey).
type IndexKeyKind int

// The kinds of index keys.
const (
	// IndexOther is any other key.
	IndexOther IndexKeyKind = iota
	// IndexPart is a date's part (IndexPartKey).
	IndexPart
	// IndexLate is a late marker (LateKey).
	IndexLate
	// IndexCompacted is a date's _compacted marker (CompactedKey).
	IndexCompacted
)

// ClassifyIndexKey says what key is: a part, a late marker (with the
// result key it names) or the _compacted marker of date. Other keys have
// kind IndexOther.
func ClassifyIndexKey(key string) (date string, kind IndexKeyKind, resultKey string) {
	if d, _, ok := IndexPartParts(key); ok {
		return d, IndexPart, ""
	}
	if d, rk, ok := lateResultKey(key); ok {
		return d, IndexLate, rk
	}
	if rest, ok := strings.CutPrefix(key, PrefixIndex+"date="); ok {
		if d, name, ok := strings.Cut(rest, "/"); ok && name == compactedName {
			return d, IndexCompacted, ""
		}
	}
	return "", IndexOther, ""
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

// dropIndexParts deletes the index parts of the date of the result at key,
// so queries read that date's JSON results until Compact writes a new part.
func dropIndexParts(ctx context.Context, b Bucket, key string) error {
	date, _, _, ok := ResultKeyParts(key)
	if !ok {
		return nil
	}
	var parts []string
	for k, err := range b.List(ctx, PrefixIndex+"date="+date+"/") {
		if err != nil {
			return fmt.Errorf("storage: index of %s: %w", date, err)
		}
		if d, kind, _ := ClassifyIndexKey(k); d == date && kind == IndexPart {
			parts = append(parts, k)
		}
	}
	for _, part := range parts {
		if err := b.Delete(ctx, part); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("storage: drop index part %s: %w", part, err)
		}
	}
	return nil
}
