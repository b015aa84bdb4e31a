// Package atomicfile replaces files so that a reader never sees half of
// one: the data goes to a temporary file in the same directory, which is
// then renamed over the old one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data (mode 0644) through a temporary file
// in path's directory; on an error path is as it was.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
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
	}
	return werr
}
