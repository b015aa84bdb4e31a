// Package atomicfile replaces files so that a reader never sees half of
// one and a crash never takes back a replacement that was reported done:
// the data goes to a temporary file in the same directory, which is
// fsynced, renamed over the old one, and then the directory is fsynced.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The fsyncs WriteFile makes; tests replace them to see when they happen.
var (
	syncFile = (*os.File).Sync
	syncDir  = SyncDir
)

// WriteFile replaces path with data (mode 0644) through a temporary file
// in path's directory. The temporary file is fsynced before it is renamed
// over path, and the directory after, so once WriteFile returns nil the
// new content survives a crash or a power loss: never an empty or partial
// file, never the old content back. On an error before the rename, path
// is as it was and no temporary file is left; an error of the directory's
// fsync comes after the rename (path holds the new content, which may not
// survive a crash). Every error names the step that failed.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	if werr == nil {
		if serr := syncFile(tmp); serr != nil {
			werr = fmt.Errorf("atomicfile: replace %s: %w", path, serr)
		}
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(name, 0o644)
	}
	if werr == nil {
		werr = os.Rename(name, path)
	}
	if werr != nil {
		os.Remove(name)
		return werr
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("atomicfile: replaced %s, but %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, so that the names created, renamed or
// removed in it survive a crash. A file system that cannot sync a
// directory (EINVAL, ENOTSUP) is accepted: there is nothing more to do.
// Any other error is returned (it names dir).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) &&
		!errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}
