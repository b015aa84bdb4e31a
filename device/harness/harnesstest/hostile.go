package harnesstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostilePreamble is what every hostile harness starts with: the runner's
// argv and a few helpers that print what the upstream harnesses print.
const hostilePreamble = `#!/usr/bin/python3
# A hostile harness (benchfleet's harnesstest): it stands where
# "<python> -m pytest ..." is run and does what the test's body says.
import json, os, sys, time
argv = sys.argv[1:]
output_file = argv[argv.index("--output-file") + 1] if "--output-file" in argv else None

def flag(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default

def loops(warmup, loop, ms):
    """Print forge's warmup and timed loops, sleeping ms per iteration."""
    for n in (warmup, loop):
        t0 = time.perf_counter()
        for i in range(n):
            time.sleep(ms / 1000.0)
            print(f"Iteration {i} took {ms:.4f} ms", flush=True)
        print(f"Total time: {time.perf_counter() - t0:.4f}s for {n} iterations", flush=True)

def report(**kw):
    """Write a forge-shaped report; keyword arguments override its fields."""
    batch = int(flag("--batch-size", "1")); loop = int(flag("--loop-count", "1"))
    r = {"model": "m", "batch_size": batch, "pcc": kw.pop("pcc", 0.99),
         "measurements": [
            {"iteration": 1, "step_name": "m", "measurement_name": "total_samples", "value": kw.pop("total_samples", batch * loop)},
            {"iteration": 1, "step_name": "m", "measurement_name": "total_time", "value": kw.pop("total_time", 1.0)}],
         "device_info": {"arch": "wormhole"}}
    r.update(kw)
    with open(output_file, "w") as f:
        json.dump(r, f)
`

// NewHostile is a checkout whose interpreter is a hostile harness: a
// Python program (body, after hostilePreamble) run by the system python3
// where the runner runs "<python> -m pytest <args>". The checkout is an
// empty directory.
func NewHostile(t testing.TB, body string) *Checkout {
	t.Helper()
	dir := t.TempDir()
	Traversable(t, dir)
	c := &Checkout{Workdir: filepath.Join(dir, "checkout"), Python: filepath.Join(dir, "bin", "python")}
	if err := os.MkdirAll(c.Workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, c.Python, hostilePreamble+body+"\n", 0o755)
	return c
}

// Traversable makes dir and its parents below the temporary directory
// (os.TempDir(): the test's own directories, which the testing package
// makes 0700) searchable (o+x) by every user, so a harness run as another
// user (the job user, e.g. nobody) reaches a checkout there. It never
// changes os.TempDir() or anything above it: when those are not
// searchable by everyone (a per-user TMPDIR made 0700), the test fails
// saying so, as the worker would refuse such a work directory.
func Traversable(t testing.TB, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for d := abs; d != tmp; d = filepath.Dir(d) {
		if d == filepath.Dir(d) || !strings.HasPrefix(d, tmp+string(filepath.Separator)) {
			return // not under the temporary directory: the caller's to arrange
		}
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	for d := tmp; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			t.Fatalf("harnesstest: %s (mode %v) is not searchable by other users, so a harness run as the job user cannot reach the test's files under TMPDIR=%s: run the tests with a TMPDIR everyone can search (e.g. TMPDIR=/tmp)", d, st.Mode().Perm(), tmp)
		}
		if d == filepath.Dir(d) {
			return
		}
	}
}
