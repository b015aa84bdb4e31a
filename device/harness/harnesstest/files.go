package harnesstest

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// Files returns the files of part of harness's tree ("checkout", or
// "site-packages/<package>"), path (slash-separated, relative to part; a
// package's files keep its directory: "forge/__init__.py") → content, to
// commit into a repository or pack into a wheel (device/build/buildtest).
func Files(t testing.TB, harness, part string) map[string]string {
	t.Helper()
	tree, ok := treeNames[harness]
	if !ok {
		t.Fatalf("harnesstest: unknown harness %q", harness)
	}
	root := "trees/" + tree + "/" + part
	base := root // a package keeps its directory
	if strings.HasPrefix(part, "site-packages/") {
		base = "trees/" + tree + "/site-packages"
	}
	out := map[string]string{}
	err := fs.WalkDir(trees, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := trees.ReadFile(p)
		if err != nil {
			return err
		}
		rel := p[len(base)+1:]
		if path.Base(rel) == "__pycache__" {
			return nil
		}
		out[rel] = string(data)
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("harnesstest: files of %s: %d (%v)", root, len(out), err)
	}
	return out
}
