package build

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// tarOf writes entries into a tar stream.
func tarOf(t *testing.T, entries ...*tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := []byte(nil)
		if h.Typeflag == tar.TypeReg {
			body = []byte("content of " + h.Name)
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func dirEntry(name string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o775}
}
func fileEntry(name string, mode int64) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode}
}
func linkEntry(name, target string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}
}

func TestExtractRefusesUnsafeEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		entries func(outside string) []*tar.Header
	}{
		{"parent", func(string) []*tar.Header { return []*tar.Header{fileEntry("../escape", 0o644)} }},
		{"climbing inside", func(string) []*tar.Header {
			return []*tar.Header{dirEntry("a/"), fileEntry("a/../../escape", 0o644)}
		}},
		{"absolute", func(o string) []*tar.Header { return []*tar.Header{fileEntry(o+"/abs", 0o644)} }},
		{"not clean", func(string) []*tar.Header { return []*tar.Header{dirEntry("a/"), fileEntry("a//b", 0o644)} }},
		{"through a symbolic link", func(o string) []*tar.Header {
			return []*tar.Header{linkEntry("link", o), fileEntry("link/planted", 0o644)}
		}},
		{"directory through a symbolic link", func(o string) []*tar.Header {
			return []*tar.Header{linkEntry("link", o), dirEntry("link/sub/")}
		}},
		{"symbolic link replaced", func(o string) []*tar.Header {
			return []*tar.Header{fileEntry("f", 0o644), linkEntry("f", o+"/planted")}
		}},
		{"twice", func(string) []*tar.Header { return []*tar.Header{fileEntry("f", 0o644), fileEntry("f", 0o644)} }},
		{"before its directory", func(string) []*tar.Header { return []*tar.Header{fileEntry("d/f", 0o644)} }},
		{"under a file", func(string) []*tar.Header { return []*tar.Header{fileEntry("f", 0o644), fileEntry("f/g", 0o644)} }},
		{"git directory", func(string) []*tar.Header { return []*tar.Header{dirEntry(".git/"), fileEntry(".git/config", 0o644)} }},
		{"hard link", func(o string) []*tar.Header {
			return []*tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: o + "/target"}}
		}},
		{"device", func(string) []*tar.Header {
			return []*tar.Header{{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}}
		}},
		{"fifo", func(string) []*tar.Header { return []*tar.Header{{Name: "p", Typeflag: tar.TypeFifo, Mode: 0o644}} }},
		{"empty link", func(string) []*tar.Header { return []*tar.Header{linkEntry("l", "")} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir, outside := filepath.Join(root, "tree"), filepath.Join(root, "outside")
			for _, d := range []string{dir, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err := extract(tarOf(t, tc.entries(outside)...), dir)
			var unsafe *unsafeEntryError
			if !errors.As(err, &unsafe) {
				t.Fatalf("extract: %v, want an unsafe entry", err)
			}
			t.Log(err)
			for _, d := range []string{root, outside} {
				names, _ := readDirNames(d)
				if len(names) != 2 && d == root || len(names) != 0 && d == outside {
					t.Errorf("%s holds %v after extract", d, names)
				}
			}
		})
	}
}

func TestExtractKeepsOnlyTheExecutableBit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	err := extract(tarOf(t,
		&tar.Header{Name: "pax_global_header", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "0123"}},
		dirEntry("d/"),
		fileEntry("d/run.sh", 0o777),
		fileEntry("d/data", 0o666),
		fileEntry("private", 0o600),
		linkEntry("d/up", "../private"),
		linkEntry("abs", "/etc/hostname"),
	), dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"d": 0o755 | os.ModeDir, "d/run.sh": 0o755, "d/data": 0o644, "private": 0o644} {
		info, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, info.Mode(), want)
		}
	}
	for name, want := range map[string]string{"d/up": "../private", "abs": "/etc/hostname"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("link %s: %q %v, want %q", name, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "pax_global_header")); err == nil {
		t.Error("the global header was extracted as a file")
	}
}
