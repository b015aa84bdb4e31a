package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// watchSyncs replaces the fsyncs of WriteFile for one test (not parallel:
// they are package state) with ones that call file and dir first.
func watchSyncs(t *testing.T, file func(*os.File) error, dir func(string) error) {
	t.Helper()
	oldFile, oldDir := syncFile, syncDir
	t.Cleanup(func() { syncFile, syncDir = oldFile, oldDir })
	syncFile = func(f *os.File) error {
		if err := file(f); err != nil {
			return err
		}
		return oldFile(f)
	}
	syncDir = func(d string) error {
		if err := dir(d); err != nil {
			return err
		}
		return oldDir(d)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// WriteFile fsyncs the temporary file holding the new content before the
// rename (the old content is still in place then) and the directory after
// it (the new content is in place), once each.
func TestWriteFileSyncsTheFileBeforeTheRenameAndTheDirectoryAfter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.xml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var steps []string
	watchSyncs(t, func(f *os.File) error {
		steps = append(steps, "file")
		if filepath.Dir(f.Name()) != dir || f.Name() == path {
			t.Errorf("synced %s, want a temporary file in %s", f.Name(), dir)
		}
		if got := readString(t, f.Name()); got != "new" {
			t.Errorf("the synced file holds %q, want the new content", got)
		}
		if got := readString(t, path); got != "old" {
			t.Errorf("at the file's sync %s holds %q: renamed before its content was synced", path, got)
		}
		return nil
	}, func(d string) error {
		steps = append(steps, "dir")
		if d != dir {
			t.Errorf("synced directory %s, want %s", d, dir)
		}
		if got := readString(t, path); got != "new" {
			t.Errorf("at the directory's sync %s holds %q, want the new content (renamed first)", path, got)
		}
		return nil
	})
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if strings.Join(steps, ",") != "file,dir" {
		t.Fatalf("syncs %v, want [file dir]", steps)
	}
	if got := readString(t, path); got != "new" {
		t.Fatalf("%s holds %q, want new", path, got)
	}
}

// A failed fsync is an error: of the file, before the rename (the old
// content stays, no temporary file is left); of the directory, after it.
// Each names the file and matches the cause.
func TestWriteFileReportsAFailedSync(t *testing.T) {
	boom := errors.New("input/output error")
	ok := func(*os.File) error { return nil }
	okDir := func(string) error { return nil }

	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "a.json")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		watchSyncs(t, func(*os.File) error { return boom }, okDir)
		err := WriteFile(path, []byte("new"))
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
			t.Fatalf("WriteFile with the file's sync failing: %v, want an error naming %s and matching the cause", err, path)
		}
		if got := readString(t, path); got != "old" {
			t.Errorf("%s holds %q after a failed sync, want the old content", path, got)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%d entries in the directory, want only the file (no temporary file left)", len(entries))
		}
	})
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "b.json")
		watchSyncs(t, ok, func(string) error { return boom })
		err := WriteFile(path, []byte("new"))
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
			t.Fatalf("WriteFile with the directory's sync failing: %v, want an error naming %s and matching the cause", err, path)
		}
	})
}

// SyncDir syncs a directory and reports one it cannot open.
func TestSyncDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatalf("SyncDir(%s): %v", dir, err)
	}
	missing := filepath.Join(dir, "missing")
	if err := SyncDir(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("SyncDir of a missing directory: %v, want not-exist naming it", err)
	}
}
