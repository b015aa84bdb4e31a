package build

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/benchfleet/benchfleet/device/build/buildtest"
)

// BenchmarkProvision compares making an environment by hand (venv with
// system site-packages and pip, then pip install of one small wheel) with
// a cold Provision of the same wheel (a fresh cache: mirror, tree and
// environment) and a hit.
func BenchmarkProvision(b *testing.B) {
	f := newFixture(b)
	path, sum := buildtest.Wheel(b, f.wheels, "benchmod", "1.0", map[string]string{"benchmod/__init__.py": "VERSION = '1.0'\n"})
	req := f.request(0, buildtest.PutWheel(b, f.store, path, sum))

	b.Run("by-hand", func(b *testing.B) {
		for b.Loop() {
			env := filepath.Join(b.TempDir(), "env")
			if out, err := exec.Command(f.python, "-m", "venv", "--system-site-packages", env).CombinedOutput(); err != nil {
				b.Fatalf("venv: %v\n%s", err, out)
			}
			pip := exec.Command(filepath.Join(env, "bin", "python"), "-m", "pip", "install", "--no-deps", "--no-index",
				"--no-cache-dir", "--disable-pip-version-check", path)
			if out, err := pip.CombinedOutput(); err != nil {
				b.Fatalf("pip: %v\n%s", err, out)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			c, err := New(f.config(b))
			if err != nil {
				b.Fatal(err)
			}
			provision(b, c, req).Release()
			c.Close()
		}
	})
	b.Run("hit", func(b *testing.B) {
		c := f.cache(b, f.config(b))
		provision(b, c, req).Release()
		for b.Loop() {
			provision(b, c, req).Release()
		}
	})
}
