package build

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device/build/buildtest"
)

// venv makes a venv over the system interpreter with args (e.g.
// --system-site-packages) and returns its python and site-packages.
func venv(t *testing.T, py string, args ...string) (python, site string) {
	t.Helper()
	dir := filepath.Join(buildtest.Dir(t), "base")
	if out, err := exec.Command(py, append(append([]string{"-m", "venv"}, args...), dir)...).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	sites, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("venv %s has site-packages %v", dir, sites)
	}
	return filepath.Join(dir, "bin", "python"), sites[0]
}

// readable makes the tree at dir readable by every user, as a host's
// harness environment is (the test's umask may have made it private).
func readable(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o444
		if d.IsDir() || mode&0o100 != 0 {
			mode |= 0o111
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A harness's interpreter is usually a venv's: an environment over it sees
// that venv's packages (which venv --system-site-packages over a venv's
// python would not), with the job's wheels first.
func TestEnvironmentOverAVenvSeesItsPackagesAfterTheWheels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base, site := venv(t, f.python, "--system-site-packages", "--without-pip")
	for name, content := range map[string]string{
		"hostmod.py":          "HOST = 'from the host venv'\n",
		"overmod/__init__.py": "VERSION = 'host'\n",
	} {
		p := filepath.Join(site, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readable(t, filepath.Dir(filepath.Dir(base)))
	c := f.cache(t, f.config(t))
	req := f.request(0, f.wheel(t, "overmod", "2.0"))
	req.Python = base
	lease := provision(t, c, req)
	defer lease.Release()
	out := asNobody(t, lease.Checkout, lease.Python, "-c", "import hostmod, overmod, pytest; print(hostmod.HOST, overmod.VERSION)")
	if strings.TrimSpace(out) != "from the host venv 2.0" {
		t.Errorf("the environment over a venv says %q, want the venv's hostmod and the wheel's overmod", out)
	}
	// Another base interpreter is another environment.
	other := provision(t, c, f.request(0, req.Wheels...))
	defer other.Release()
	if other.Hit || other.Python == lease.Python {
		t.Errorf("the build over %s got %s, over %s %s", f.python, other.Python, base, lease.Python)
	}
}

// A base that cannot import pip gets an environment with a pip of its own
// (ensurepip), which sees only what the base sees.
func TestEnvironmentOverAnInterpreterWithoutPip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base, _ := venv(t, f.python, "--without-pip")
	readable(t, filepath.Dir(filepath.Dir(base)))
	c := f.cache(t, f.config(t))
	req := f.request(0, f.wheel(t, "nopipmod", "1.0"))
	req.Python = base
	lease := provision(t, c, req)
	defer lease.Release()
	out := asNobody(t, lease.Checkout, lease.Python, "-c", `
import importlib.util, nopipmod
print(nopipmod.VERSION, importlib.util.find_spec("pytest") is None)`)
	if strings.TrimSpace(out) != "1.0 True" {
		t.Errorf("the environment over a venv without pip or system packages says %q, want the wheel and no pytest", out)
	}
}
