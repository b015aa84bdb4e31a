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

//go:embed fake-tt-smi
var fakeTTSMI []byte

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

// TTHost is a fake Tenstorrent host: n150 boards as files under DevRoot and
// a tt-smi that lists the nodes still there.
type TTHost struct {
	DevRoot string
	// TTSMI is the fake tt-smi. Its calls are appended to CallLog.
	TTSMI   string
	CallLog string
	// Sys is a sysfs root in tt-kmd's layout: Sys/tenstorrent!N/device
	// links to the board's PCI device directory, which holds
	// hwmon/hwmon0/{power1_input (µW), temp1_input (m°C)}.
	Sys string
}

// Hwmon returns node n's hwmon directory.
func (h *TTHost) Hwmon(n int) string {
	return filepath.Join(h.Sys, fmt.Sprintf("tenstorrent!%d", n), "device", "hwmon", "hwmon0")
}

// NewTTHost makes a host with nodes boards (0..nodes-1). A reset of a node
// listed in resetKills removes it (the reset leaves the board gone while
// tt-smi exits 0, as real tt-smi can).
func NewTTHost(t testing.TB, nodes int, resetKills ...string) *TTHost {
	t.Helper()
	dir := t.TempDir()
	h := &TTHost{DevRoot: filepath.Join(dir, "dev"), CallLog: filepath.Join(dir, "tt-smi.calls"), Sys: filepath.Join(dir, "sys")}
	if err := os.MkdirAll(h.DevRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		write(t, filepath.Join(h.DevRoot, fmt.Sprint(i)), "", 0o644)
		// The fake tt-smi puts node i at bus 0000:0<i+1>:00.0.
		pci := filepath.Join(h.Sys, "pci", fmt.Sprintf("0000:0%d:00.0", i+1))
		write(t, filepath.Join(pci, "hwmon", "hwmon0", "power1_input"), "20000000\n", 0o644)
		write(t, filepath.Join(pci, "hwmon", "hwmon0", "temp1_input"), "40000\n", 0o644)
		link := filepath.Join(h.Sys, fmt.Sprintf("tenstorrent!%d", i))
		if err := os.MkdirAll(link, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(pci, filepath.Join(link, "device")); err != nil {
			t.Fatal(err)
		}
	}
	impl := filepath.Join(dir, "fake-tt-smi.sh")
	write(t, impl, string(fakeTTSMI), 0o755)
	h.TTSMI = filepath.Join(dir, "tt-smi")
	write(t, h.TTSMI, fmt.Sprintf("#!/bin/sh\nFAKE_DEV_ROOT=%q FAKE_CALL_LOG=%q FAKE_RESET_KILLS=%q exec %q \"$@\"\n",
		h.DevRoot, h.CallLog, strings.Join(resetKills, ","), impl), 0o755)
	return h
}

// Calls returns the tt-smi invocations so far, one "tt-smi ARGS" per call.
func (h *TTHost) Calls(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(h.CallLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
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
