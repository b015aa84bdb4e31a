// Package harnesstest holds benchfleet's stand-ins for the upstream world
// a Tenstorrent host has, in one place, for tests of every package: a fake
// upstream checkout with a fake interpreter whose `-m pytest` behaves as
// the tt-forge-onnx or tt-xla perf harness does (fake_pytest.py, which says
// which upstream sources it follows), and a fake tt-smi over a fake
// /dev/tenstorrent (fake-tt-smi).
package harnesstest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed fake_pytest.py
var fakePytest []byte

// Test ids the fake knows, as upstream names them.
const (
	// ForgeResNet50 is tt-forge-onnx's parametrized resnet50 perf test.
	ForgeResNet50 = "forge/test/benchmark/test_vision.py::test_resnet50[50 HF]"
	// ForgeUnmarked is an unmarked helper in the same file: -m perf
	// deselects it (pytest exit 5).
	ForgeUnmarked = "forge/test/benchmark/test_vision.py::test_vision"
	// ForgeMissing is an id that does not exist (pytest exit 4, "not found").
	ForgeMissing = "forge/test/benchmark/test_vision.py::test_resnet50[18 HF]"
	// XLAResNet50 is tt-xla's resnet50 vision benchmark (marks "benchmark",
	// "n150", "p150" from perf_marks.json).
	XLAResNet50 = "tests/benchmark/test_vision.py::test_resnet50"
)

// Checkout is a fake upstream checkout and its Python environment.
type Checkout struct {
	// Workdir is the checkout (harness settings "workdir").
	Workdir string
	// Python is the environment's interpreter (harness settings "python").
	Python string
	// SitePackages holds the "installed" wheel; removing it breaks the host.
	SitePackages string
}

// Python3 returns the real interpreter the fake runs on, or skips the test.
func Python3(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the fake harness needs it")
	}
	// Resolve shims (pyenv) to the interpreter itself, so the fake works
	// under the allowlisted environment the runner gives harnesses.
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3 does not run: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// NewCheckout lays out a fake checkout for harness ("forge" or "tt-xla") in
// dir (a fresh temp dir when ""), with its environment's wheel installed
// unless broken is set (the conftest then cannot be imported).
func NewCheckout(t testing.TB, harness, dir string, broken bool) *Checkout {
	t.Helper()
	py := Python3(t)
	if dir == "" {
		dir = t.TempDir()
	}
	c := &Checkout{Workdir: filepath.Join(dir, "checkout"), SitePackages: filepath.Join(dir, "env", "site-packages")}
	var files []string
	wheel := "forge"
	switch harness {
	case "forge":
		files = []string{"forge/test/conftest.py", "forge/test/benchmark/conftest.py", "forge/test/benchmark/test_vision.py"}
	case "tt-xla":
		files = []string{"tests/conftest.py", "tests/benchmark/conftest.py", "tests/benchmark/test_vision.py", "tests/benchmark/perf_marks.json"}
		wheel = "torch"
	default:
		t.Fatalf("harnesstest: unknown harness %q", harness)
	}
	for _, f := range files {
		write(t, filepath.Join(c.Workdir, f), "# stand-in: the fake interpreter knows what this file holds upstream\n", 0o644)
	}
	if !broken {
		write(t, filepath.Join(c.SitePackages, wheel, "__init__.py"), "", 0o644)
	}
	fake := filepath.Join(dir, "env", "fake_pytest.py")
	write(t, fake, string(fakePytest), 0o644)
	c.Python = filepath.Join(dir, "env", "bin", "python")
	write(t, c.Python, fmt.Sprintf("#!/bin/sh\nFAKE_SITE_PACKAGES=%q exec %q %q \"$@\"\n", c.SitePackages, py, fake), 0o755)
	return c
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
