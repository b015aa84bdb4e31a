package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A partition stamp is a cheap fingerprint of a date partition's JSON
// results, recorded in the index part ("benchfleet.stamp") when it is
// written. While the stamp is unchanged the part covers the partition
// exactly, so a query answers that date from the part without listing its
// result keys (the listing costs more than reading the part).
//
// Only the file bucket has stamps: the names and modification times of the
// run folders of a date. Every write into a run folder (a result, created
// through a temporary file and a rename or link) changes that folder's
// modification time, and a new run adds a folder. Other backends list
// keys as before.
//
// Coarse file-system clocks could let a write land in the same tick as the
// stamp was taken; so a stamp is recorded only when every run folder of the
// date is older than StampSettle, and a partition with recent writes is
// checked by listing, as without stamps. A tool that restores old
// modification times into a store (rsync -t of a run folder) should be
// followed by `benchfleet results compact --force`.
// StampSettle is how long a date partition must go without writes before
// compaction records its stamp.
const StampSettle = 2 * time.Second

// stamper is implemented by buckets that can fingerprint a date partition.
type stamper interface {
	// partitionStamp returns the stamp of date's results and whether it is
	// settled (no change younger than StampSettle). A date without results
	// has the stamp "".
	partitionStamp(ctx context.Context, date string) (stamp string, settled bool, err error)
}

// errStaleStamp: the part's recorded stamp differs from the partition's.
var errStaleStamp = errors.New("index part stamp differs from the partition")

// partitionStamp implements stamper: one directory read and one stat per
// run folder.
func (b *FileBucket) partitionStamp(ctx context.Context, date string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	rel := PrefixResults + "date=" + date
	if err := CheckKey(rel); err != nil {
		return "", false, err
	}
	dir := filepath.Join(b.root, filepath.FromSlash(rel))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("storage: stamp %s: %w", date, err)
	}
	lines := make([]string, 0, len(entries))
	settled := true
	cutoff := time.Now().Add(-StampSettle)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			settled = false // a write in progress
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			settled = false
			continue
		}
		if err != nil {
			return "", false, fmt.Errorf("storage: stamp %s: %w", date, err)
		}
		if info.ModTime().After(cutoff) {
			settled = false
		}
		lines = append(lines, fmt.Sprintf("%s\x00%d\x00%d", e.Name(), info.ModTime().UnixNano(), info.Size()))
	}
	if len(lines) == 0 {
		return "", settled, nil
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), settled, nil
}
