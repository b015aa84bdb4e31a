package export

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchfleet/benchfleet/protocol"
)

// WriteTo writes rs as benchmark JSON lines to path, or to stdout when path
// is empty; a directory (existing, or a path ending in /) gets one file per
// CI pipeline, named as Tenstorrent's loader names them (GroupFiles). A
// file is written to a temporary name and renamed, so a reader never sees
// half an export. What was written is said on stdout, a file a line. An
// error about path itself (it cannot be created) is a *PathError.
func WriteTo(stdout io.Writer, path string, rs []*protocol.Result) error {
	if path == "" {
		return WriteJSONL(stdout, rs)
	}
	if st, err := os.Stat(path); (err == nil && st.IsDir()) || strings.HasSuffix(path, "/") {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return &PathError{Path: path, Err: err}
		}
		names, groups := GroupFiles(rs)
		for _, name := range names {
			p := filepath.Join(path, name)
			if err := writeFile(p, groups[name]); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "exported %s to %s\n", results(len(groups[name])), p)
		}
		if len(names) == 0 {
			fmt.Fprintf(stdout, "exported 0 results (nothing matched)\n")
		}
		return nil
	}
	if err := writeFile(path, rs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "exported %s to %s\n", results(len(rs)), path)
	return nil
}

// PathError is an export path that cannot be written.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("%q: %v", e.Path, e.Err) }
func (e *PathError) Unwrap() error { return e.Err }

func results(n int) string {
	if n == 1 {
		return "1 result"
	}
	return fmt.Sprintf("%d results", n)
}

func writeFile(path string, rs []*protocol.Result) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return &PathError{Path: path, Err: err}
	}
	defer os.Remove(tmp.Name())
	if err := WriteJSONL(tmp, rs); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%q: %w", path, err)
	}
	return nil
}
