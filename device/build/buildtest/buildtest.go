// Package buildtest makes the real parts a build takes, for tests of
// every package that provisions builds (device/build, the harness, the
// worker): PEP 427 wheels written in Go, bare git repositories made with
// real git, and the skip-or-fail check for the host's python3 venv and
// git.
package buildtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/internal/buildkit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// SystemPython is the interpreter the tests make environments over:
// Debian's, with python3-venv (scripts/install-pytest.sh installs it).
const SystemPython = "/usr/bin/python3"

// Python returns SystemPython when it has venv and ensurepip and git is
// installed, or skips the test saying what is missing; with
// BENCHFLEET_REQUIRE_PYTEST=1 (as make test sets) it fails instead.
func Python(t testing.TB) string {
	t.Helper()
	var missing []string
	if out, err := exec.Command(SystemPython, "-c", "import venv, ensurepip").CombinedOutput(); err != nil {
		missing = append(missing, fmt.Sprintf("%s with venv and ensurepip (Debian's python3-venv): %v %s", SystemPython, err, strings.TrimSpace(string(out))))
	}
	if _, err := exec.LookPath("git"); err != nil {
		missing = append(missing, "git")
	}
	if len(missing) > 0 {
		msg := "the build tests need " + strings.Join(missing, " and ") + " (scripts/install-pytest.sh)"
		if os.Getenv("BENCHFLEET_REQUIRE_PYTEST") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return SystemPython
}

// Dir returns a fresh temporary directory that every user can reach (the
// directories the testing package makes under TMPDIR are 0700): a build
// cache there serves a job run as nobody.
func Dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	tmp := filepath.Clean(os.TempDir())
	for d := dir; d != tmp && strings.HasPrefix(d, tmp+string(filepath.Separator)); d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, info.Mode().Perm()|0o055); err != nil {
			t.Fatal(err)
		}
	}
	for d := tmp; ; d = filepath.Dir(d) {
		if info, err := os.Stat(d); err != nil || info.Mode().Perm()&0o001 == 0 {
			t.Fatalf("buildtest: %s is not searchable by other users: run the tests with a TMPDIR everyone can search (e.g. TMPDIR=/tmp)", d)
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// DistInfo is the .dist-info directory of dist at version in a wheel.
func DistInfo(dist, version string) string { return buildkit.DistInfo(dist, version) }

// Wheel writes a valid PEP 427 wheel of dist at version (pure Python,
// py3-none-any) into dir holding files (path in the wheel → content):
// the files, and DistInfo's METADATA, WHEEL and RECORD unless files holds
// one of them (a test's malformed WHEEL, say). A file whose content starts
// with "#!" is executable. It returns the wheel's path and its sha256.
func Wheel(t testing.TB, dir, dist, version string, files map[string]string) (path, sha256Hex string) {
	t.Helper()
	path, sha256Hex, err := buildkit.WriteWheel(dir, dist, version, files)
	if err != nil {
		t.Fatalf("buildtest: %v", err)
	}
	return path, sha256Hex
}

// PutWheel stores the wheel file at path in b under its build key
// (protocol.BuildKey(sha256Hex, its file name)) and returns it as a job
// names it.
func PutWheel(t testing.TB, b storage.Bucket, path, sha256Hex string) protocol.Wheel {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := protocol.Wheel{URL: protocol.BuildKey(sha256Hex, filepath.Base(path)), SHA256: sha256Hex}
	if err := b.Put(context.Background(), w.URL, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	return w
}

// Repo makes a bare git repository with real git holding one commit per
// map of files (path → content; each commit's files overlay the previous
// ones', a file whose content starts with "#!" is executable), on branch
// main, and returns its directory and the commits' full ids in order.
func Repo(t testing.TB, commits ...map[string]string) (dir string, ids []string) {
	t.Helper()
	dir, ids, err := buildkit.MakeRepo(t.TempDir(), commits...)
	if err != nil {
		t.Fatalf("buildtest: %v", err)
	}
	return dir, ids
}
