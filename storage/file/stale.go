package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StaleTempAge is how old a Put's temporary file (.tmp-*) must be before
// RemoveStaleTemps takes it for the leftover of a process killed mid-write:
// a Put that still runs finishes in seconds, not an hour.
const StaleTempAge = time.Hour

// RemoveStaleTemps deletes the temporary files (.tmp-*) that Puts killed
// mid-write (SIGKILL, power loss) left in the bucket, those last modified
// before now minus olderThan (StaleTempAge when olderThan <= 0), and
// returns how many it removed. They are never keys (List skips them);
// nothing else removes them. A temporary file of a Put still running is
// younger and left alone.
func (b *Bucket) RemoveStaleTemps(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		olderThan = StaleTempAge
	}
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	err := filepath.WalkDir(b.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.ModTime().After(cutoff) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed++
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("storage: file bucket %q: remove stale temporary files: %w", b.root, err)
	}
	return removed, nil
}
