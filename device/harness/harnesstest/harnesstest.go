// Package harnesstest holds benchfleet's stand-ins for the upstream world
// a Tenstorrent host has, in one place, for tests of every package:
//
//   - upstream-shaped test trees (trees/tt-forge-onnx, trees/tt-xla), laid
//     out and behaving like tt-forge-onnx's forge/test/benchmark and
//     tt-xla's tests/ (each tree's README says which upstream file and
//     commit each file follows), with the model compute replaced by
//     sleeps. They run under REAL pytest (Debian's python3-pytest) in a
//     real venv (python3 -m venv --system-site-packages), so what pytest
//     does with conftests, marks, node ids, import errors and signals is
//     pytest's, not ours;
//   - a fake tt-smi over a fake /dev/tenstorrent and tt-kmd sysfs
//     (fake-tt-smi, tthost.go): there is no real part without a board.
package harnesstest

import (
	"embed"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

//go:embed all:trees
var trees embed.FS

// Test ids the trees have, as upstream names them.
const (
	// ForgeResNet50 is tt-forge-onnx's parametrized resnet50 perf test;
	// its parameter id is the model variant's value (tt-forge-models'
	// StrEnum), "resnet_50_hf".
	ForgeResNet50 = "forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]"
	// ForgeUnmarked is the unmarked helper in the same file: -m perf
	// deselects it (pytest exit 5).
	ForgeUnmarked = "forge/test/benchmark/test_vision.py::test_vision"
	// ForgeMissing is an id that does not exist (pytest exit 4, "not found").
	ForgeMissing = "forge/test/benchmark/test_vision.py::test_resnet50[resnet_18_hf]"
	// XLAResNet50 is tt-xla's resnet50 vision benchmark: it fixes its
	// batch at 8 and requires PCC 0.90.
	XLAResNet50 = "tests/benchmark/test_vision.py::test_resnet50"
	// XLAMissing is an id tt-xla's test module does not have.
	XLAMissing = "tests/benchmark/test_vision.py::test_resnet_nope"
)

// Checkout is an upstream-shaped checkout and its Python environment.
type Checkout struct {
	// Workdir is the checkout (harness settings "workdir").
	Workdir string
	// Python is the environment's interpreter (harness settings "python"),
	// a venv's bin/python.
	Python string
	// SitePackages is the venv's site-packages, holding the stand-ins of
	// what the host installed (the forge wheel; torch_xla); without them
	// the harness cannot import, as on a host whose environment is broken.
	SitePackages string
}

// SystemPython is the interpreter Debian's python3-pytest belongs to.
const SystemPython = "/usr/bin/python3"

// Python3 returns an interpreter with real pytest and venv (Debian's
// python3-pytest and python3-venv; scripts/install-pytest.sh installs
// them), or skips the test; with BENCHFLEET_REQUIRE_PYTEST=1 (as make test
// sets) it fails instead.
func Python3(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(SystemPython, "-c", "import pytest, venv; print(pytest.__version__)").CombinedOutput()
	if err != nil {
		msg := "the harness tests need Debian's python3-pytest and python3-venv for " + SystemPython + " (scripts/install-pytest.sh): " + string(out)
		if os.Getenv("BENCHFLEET_REQUIRE_PYTEST") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return SystemPython
}

// treeNames maps a harness to its tree.
var treeNames = map[string]string{"forge": "tt-forge-onnx", "tt-xla": "tt-xla"}

// NewCheckout lays out the upstream-shaped checkout of harness ("forge" or
// "tt-xla") in dir (a fresh temp dir when ""): dir/checkout, and a venv
// at dir/env with the host's packages installed unless broken is set
// (then the conftest cannot import them: exit 4, "ImportError while
// loading conftest").
func NewCheckout(t testing.TB, harness, dir string, broken bool) *Checkout {
	t.Helper()
	if broken {
		return NewCheckoutMissing(t, harness, dir, "*")
	}
	return NewCheckoutMissing(t, harness, dir)
}

// NewCheckoutMissing is NewCheckout on a host whose environment lacks the
// named top-level packages of the tree's site-packages ("*": all of
// them). A tt-xla host with torch but without torch_xla fails to import
// the test module, not a conftest.
func NewCheckoutMissing(t testing.TB, harness, dir string, missing ...string) *Checkout {
	t.Helper()
	py := Python3(t)
	tree, ok := treeNames[harness]
	if !ok {
		t.Fatalf("harnesstest: unknown harness %q", harness)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	Traversable(t, dir) // the job user reads the checkout and runs the venv
	c := &Checkout{Workdir: filepath.Join(dir, "checkout")}
	copyTree(t, "trees/"+tree+"/checkout", c.Workdir)
	env := filepath.Join(dir, "env")
	if out, err := exec.Command(py, "-m", "venv", "--system-site-packages", "--without-pip", env).CombinedOutput(); err != nil {
		t.Fatalf("harnesstest: venv: %v\n%s", err, out)
	}
	c.Python = filepath.Join(env, "bin", "python")
	sites, _ := filepath.Glob(filepath.Join(env, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("harnesstest: venv %s has site-packages %v", env, sites)
	}
	c.SitePackages = sites[0]
	pkgs, err := trees.ReadDir("trees/" + tree + "/site-packages")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if !slices.Contains(missing, "*") && !slices.Contains(missing, p.Name()) {
			copyTree(t, "trees/"+tree+"/site-packages/"+p.Name(), filepath.Join(c.SitePackages, p.Name()))
		}
	}
	return c
}

// copyTree writes the embedded tree src to dst. Shell scripts stay
// executable.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := fs.WalkDir(trees, src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := trees.ReadFile(path)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if len(data) > 2 && string(data[:2]) == "#!" {
			mode = 0o755
		}
		return os.WriteFile(target, data, mode)
	})
	if err != nil {
		t.Fatalf("harnesstest: copy %s: %v", src, err)
	}
}

// Dump is what a tree's harness writes to FAKE_ENV_DUMP: the environment
// it got, its working directory, its sys.path, and what it resolved.
type Dump struct {
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	SysPath []string          `json:"sys_path"`
	// Infra is the file tt-xla's test infrastructure module was imported
	// from (tt-xla only).
	Infra string `json:"infra"`
	// WatchdogTimeoutS is the timeout forge's watchdog chose (after
	// FAKE_WATCHDOG_SCALE), and TestDurationsFound whether it found
	// .test_durations in its working directory (forge only).
	WatchdogTimeoutS   float64 `json:"watchdog_timeout_s"`
	TestDurationsFound bool    `json:"test_durations_found"`
}

// DumpPath is a FAKE_ENV_DUMP path the harness can write as the job user:
// in a fresh directory everyone may write (sticky, as /tmp), reachable
// from /.
func DumpPath(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Traversable(t, dir)
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "dump.json")
}

// ReadDump reads a FAKE_ENV_DUMP file.
func ReadDump(t testing.TB, path string) Dump {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("harnesstest: the harness wrote no dump: %v", err)
	}
	var d Dump
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("harnesstest: dump %s: %v", path, err)
	}
	return d
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
