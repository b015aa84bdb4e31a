package build

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// The test tree: commit 1 and commit 2 differ in data/note.txt.
var (
	treeOne = map[string]string{
		"tests/test_build.py": "import bfmod\n\n\ndef test_version():\n    assert bfmod.VERSION == '1.0'\n",
		"run.sh":              "#!/bin/sh\necho run\n",
		"data/note.txt":       "commit one\n",
	}
	treeTwo = map[string]string{"data/note.txt": "commit two\n"}
)

const testRepo = "example/bench-tree"

// fixture is a store with wheels, a repository and a way to make caches.
type fixture struct {
	python  string
	store   *file.Bucket
	wheels  string // where wheel files are written
	repo    string
	commits []string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	py := buildtest.Python(t)
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, ids := buildtest.Repo(t, treeOne, treeTwo)
	return &fixture{python: py, store: store, wheels: t.TempDir(), repo: repo, commits: ids}
}

// config is a Config of a fresh cache directory every user can reach.
func (f *fixture) config(t testing.TB) Config {
	t.Helper()
	return Config{
		Dir:      filepath.Join(buildtest.Dir(t), "cache"),
		Repos:    map[string]string{testRepo: f.repo},
		Fetch:    f.store.Get,
		NotFound: func(err error) bool { return errors.Is(err, storage.ErrNotFound) },
	}
}

func (f *fixture) cache(t testing.TB, cfg Config) *Cache {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wheel makes and stores the wheel of module mod (dist mod, a module of
// the same name holding VERSION and a console script mod-hello).
func (f *fixture) wheel(t testing.TB, mod, version string) protocol.Wheel {
	t.Helper()
	path, sum := buildtest.Wheel(t, f.wheels, mod, version, map[string]string{
		mod + "/__init__.py": "VERSION = '" + version + "'\n\n\ndef hello():\n    print('hello from " + mod + " " + version + "')\n",
		buildtest.DistInfo(mod, version) + "/entry_points.txt": "[console_scripts]\n" + mod + "-hello = " + mod + ":hello\n",
	})
	return buildtest.PutWheel(t, f.store, path, sum)
}

func (f *fixture) request(commit int, wheels ...protocol.Wheel) device.BuildRequest {
	return device.BuildRequest{Python: f.python, Repo: testRepo, Commit: f.commits[commit], Wheels: wheels}
}

func provision(t testing.TB, c *Cache, req device.BuildRequest) *device.BuildLease {
	t.Helper()
	var log bytes.Buffer
	lease, err := c.Provision(t.Context(), req, &log)
	if err != nil {
		t.Fatalf("Provision: %v\nlog:\n%s", err, log.String())
	}
	return lease
}

// asNobody runs name as uid:gid 65534 (nobody) in dir with a bare
// environment; without root it runs as the test's own user.
func asNobody(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C"}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s as nobody: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkModes fails when anything under dir is writable by group or
// others.
func checkModes(t testing.TB, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s is writable by others: %v", p, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProvisionedBuildRunsAsNobodyAndIsAHitTheSecondTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.cache(t, f.config(t))
	req := f.request(0, f.wheel(t, "bfmod", "1.0"))

	first := provision(t, c, req)
	defer first.Release()
	if first.Hit {
		t.Error("the first Provision of a build is a hit")
	}
	if !strings.HasPrefix(first.Python, c.dir+"/envs/") || !strings.HasPrefix(first.Checkout, c.dir+"/trees/") {
		t.Fatalf("lease %+v is not in the cache %s", first, c.dir)
	}
	// The job user runs the commit's tests with the wheel, from the
	// environment's site-packages, the way the harness does.
	out := asNobody(t, first.Checkout, first.Python, "-c",
		"import bfmod, sys; assert bfmod.__file__.startswith(sys.prefix + '/'), (bfmod.__file__, sys.prefix); print(bfmod.VERSION, open('data/note.txt').read().strip())")
	if strings.TrimSpace(out) != "1.0 commit one" {
		t.Errorf("the build as nobody says %q, want the wheel's version and commit one's note", out)
	}
	if out := asNobody(t, first.Checkout, first.Python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_build.py"); !strings.Contains(out, "1 passed") {
		t.Errorf("pytest of the tree as nobody:\n%s", out)
	}
	// The wheel's console script has the environment's final path.
	if out := asNobody(t, first.Checkout, filepath.Join(filepath.Dir(first.Python), "bfmod-hello")); strings.TrimSpace(out) != "hello from bfmod 1.0" {
		t.Errorf("console script says %q", out)
	}
	if info, err := os.Stat(filepath.Join(first.Checkout, "run.sh")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("run.sh of the tree: %v %v, want mode 0755", info, err)
	}
	if info, err := os.Stat(filepath.Join(first.Checkout, "data/note.txt")); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("data/note.txt of the tree: %v %v, want mode 0644", info, err)
	}
	checkModes(t, first.Checkout)
	checkModes(t, filepath.Dir(filepath.Dir(first.Python)))

	second := provision(t, c, req)
	defer second.Release()
	if !second.Hit {
		t.Error("the second Provision of a build is not a hit")
	}
	if second.Python != first.Python || second.Checkout != first.Checkout {
		t.Errorf("the hit leases %+v, the miss %+v", second, first)
	}
	t.Logf("setup: miss %v, hit %v (%.0fx faster)", first.Setup, second.Setup, float64(first.Setup)/float64(second.Setup))

	// The other commit is another tree with the same environment.
	other := provision(t, c, f.request(1, req.Wheels...))
	defer other.Release()
	if other.Hit || other.Python != first.Python || other.Checkout == first.Checkout {
		t.Errorf("commit 2's lease %+v, commit 1's %+v: want a new tree over the same environment", other, first)
	}
	if data, _ := os.ReadFile(filepath.Join(other.Checkout, "data/note.txt")); string(data) != "commit two\n" {
		t.Errorf("commit 2's note: %q", data)
	}
}

func TestProvisionErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	good := f.wheel(t, "goodmod", "1.0")
	path, sum := buildtest.Wheel(t, f.wheels, "badwheel", "1.0", map[string]string{
		"badwheel.py": "X = 1\n",
		buildtest.DistInfo("badwheel", "1.0") + "/WHEEL": "Wheel-Version: 9.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	})
	bad := buildtest.PutWheel(t, f.store, path, sum)
	missing := protocol.Wheel{URL: protocol.BuildKey(strings.Repeat("ab", 32), "nothere-1.0-py3-none-any.whl"), SHA256: strings.Repeat("ab", 32)}
	notRepo := t.TempDir()

	cfg := f.config(t)
	cfg.Repos["example/broken"] = notRepo
	cfg.Repos["example/gone"] = "/nonexistent/benchfleet/repo.git"
	cfg.Repos["example/secret"] = "https://bench:s3cr3t-token@127.0.0.1:1/repo.git"
	c := f.cache(t, cfg)

	for _, tc := range []struct {
		name string
		req  device.BuildRequest
		cfg  func(*Config)
		// is checks the error's type; want are words it must hold.
		is   func(error) bool
		want []string
		log  string // what the job's log must hold
		// hidden must appear in neither the error nor the log.
		hidden string
	}{
		{name: "missing wheel", req: f.request(0, missing), is: device.IsInvalid,
			want: []string{"nothere-1.0-py3-none-any.whl", "is not in the store", missing.URL}},
		{name: "unknown repo", req: device.BuildRequest{Python: f.python, Repo: "example/unknown", Commit: f.commits[0], Wheels: []protocol.Wheel{good}},
			is: device.IsInvalid, want: []string{`"example/unknown"`, "builds.repos"}},
		{name: "unknown commit", req: device.BuildRequest{Python: f.python, Repo: testRepo, Commit: strings.Repeat("0123456789", 4), Wheels: []protocol.Wheel{good}},
			is: device.IsInvalid, want: []string{strings.Repeat("0123456789", 4), "is not in " + testRepo}},
		{name: "abbreviated commit", req: device.BuildRequest{Python: f.python, Repo: testRepo, Commit: f.commits[0][:12], Wheels: []protocol.Wheel{good}},
			is: device.IsInvalid, want: []string{"full commit"}},
		{name: "broken mirror", req: device.BuildRequest{Python: f.python, Repo: "example/broken", Commit: f.commits[0], Wheels: []protocol.Wheel{good}},
			is: isHost, want: []string{"example/broken", "cannot read", notRepo}},
		{name: "unreachable mirror", req: device.BuildRequest{Python: f.python, Repo: "example/gone", Commit: f.commits[0], Wheels: []protocol.Wheel{good}},
			is: isHost, want: []string{"example/gone", "cannot read"}},
		{name: "mirror with credentials", req: device.BuildRequest{Python: f.python, Repo: "example/secret", Commit: f.commits[0], Wheels: []protocol.Wheel{good}},
			is: isHost, want: []string{"example/secret", "cannot read", "https://REDACTED@127.0.0.1:1/repo.git"}, hidden: "s3cr3t-token"},
		{name: "interpreter missing", req: device.BuildRequest{Python: "/nonexistent/python3", Repo: testRepo, Commit: f.commits[0], Wheels: []protocol.Wheel{good}},
			is: isHost, want: []string{"/nonexistent/python3", "cannot run"}},
		{name: "pip refuses the wheel", req: f.request(0, bad), is: device.IsBenchmark,
			want: []string{"the job's build failed: pip install badwheel-1.0-py3-none-any.whl", "Wheel-Version (9.0)"},
			log:  "is not compatible with this version of pip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			lease, err := c.Provision(t.Context(), tc.req, &log)
			if err == nil {
				lease.Release()
				t.Fatal("Provision succeeded")
			}
			t.Log(err)
			if !tc.is(err) {
				t.Errorf("error %T %v is of the wrong kind", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.hidden != "" && (strings.Contains(err.Error(), tc.hidden) || strings.Contains(log.String(), tc.hidden)) {
				t.Errorf("the error or the log shows %q:\n%v\n%s", tc.hidden, err, log.String())
			}
			if !strings.Contains(log.String(), tc.log) {
				t.Errorf("log does not hold %q:\n%s", tc.log, log.String())
			}
		})
	}
}

func isHost(err error) bool {
	var h *device.HostError
	return errors.As(err, &h)
}

func TestProvisionWithoutGitIsAHostFault(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(t)
	cfg.Git = "/nonexistent/git"
	c := f.cache(t, cfg)
	_, err := c.Provision(t.Context(), f.request(0, f.wheel(t, "gitless", "1.0")), io.Discard)
	if !isHost(err) || !strings.Contains(err.Error(), "git (/nonexistent/git) is not installed") {
		t.Fatalf("error %T %v, want a host fault naming git", err, err)
	}
}

func TestTamperedWheelIsInvalidBeforeAnythingIsMade(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.cache(t, f.config(t))
	path, actual := buildtest.Wheel(t, f.wheels, "tampered", "1.0", map[string]string{"tampered.py": "X = 1\n"})
	claimed := strings.Repeat("0f", 32)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := protocol.Wheel{URL: protocol.BuildKey(claimed, filepath.Base(path)), SHA256: claimed}
	if err := f.store.Put(t.Context(), w.URL, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Provision(t.Context(), f.request(0, w), io.Discard)
	if !device.IsInvalid(err) {
		t.Fatalf("error %T %v, want invalid", err, err)
	}
	for _, s := range []string{filepath.Base(path), claimed, actual} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	for _, sub := range []string{dirWheels, dirTrees, dirEnvs, dirMirrors} {
		if names, _ := readDirNames(c.path(sub)); len(names) != 0 {
			t.Errorf("%s holds %v after a tampered wheel", sub, names)
		}
	}
	if b := c.Bytes(); b != 0 {
		t.Errorf("Bytes = %d after a tampered wheel", b)
	}
}

func TestConcurrentProvisionsMakeTheBuildOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(t)
	var mu sync.Mutex
	results := map[string]int{}
	cfg.OnSetup = func(result string, _ time.Duration) {
		mu.Lock()
		results[result]++
		mu.Unlock()
	}
	// The first caller's wheel fetch holds until the second caller says
	// it waits for the first's making: the two provisions overlap however
	// the goroutines are scheduled.
	fetching, overlap := make(chan struct{}), make(chan struct{})
	var fetchOnce, waitOnce sync.Once
	cfg.Fetch = func(ctx context.Context, key string) (io.ReadCloser, error) {
		fetchOnce.Do(func() {
			close(fetching)
			select {
			case <-overlap:
			case <-time.After(time.Minute):
			}
		})
		return f.store.Get(ctx, key)
	}
	c := f.cache(t, cfg)
	req := f.request(0, f.wheel(t, "twice", "1.0"))
	leases := make([]*device.BuildLease, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { leases[0], errs[0] = c.Provision(t.Context(), req, io.Discard) })
	<-fetching
	wg.Go(func() {
		leases[1], errs[1] = c.Provision(t.Context(), req, writerFunc(func(p []byte) {
			if strings.Contains(string(p), "waiting for another job making the same build") {
				waitOnce.Do(func() { close(overlap) })
			}
		}))
	})
	wg.Wait()
	select {
	case <-overlap:
	default:
		t.Fatal("the second provision never waited for the first: they did not overlap")
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Provision %d: %v", i, err)
		}
		defer leases[i].Release()
	}
	if results[SetupMiss] != 1 || results[SetupHit] != 1 {
		t.Errorf("setup results %v, want one miss and one hit", results)
	}
	if leases[0].Hit == leases[1].Hit {
		t.Errorf("hits %v and %v: want the one that waited to be a hit", leases[0].Hit, leases[1].Hit)
	}
	if leases[0].Python != leases[1].Python || leases[0].Checkout != leases[1].Checkout {
		t.Errorf("leases %+v and %+v differ", leases[0], leases[1])
	}
	envs, _ := readDirNames(c.path(dirEnvs))
	if len(envs) != 2 { // the environment and its record
		t.Errorf("envs/ holds %v, want one environment", envs)
	}
	for _, l := range leases {
		if out := asNobody(t, l.Checkout, l.Python, "-c", "import twice; print(twice.VERSION)"); strings.TrimSpace(out) != "1.0" {
			t.Errorf("lease %s imports version %q", l.Python, out)
		}
	}
}

func TestEvictionKeepsTheLeasedBuild(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.cache(t, f.config(t))
	a := provision(t, c, f.request(0, f.wheel(t, "evicta", "1.0")))
	defer a.Release()
	// Bound the cache to a's build (tree, wheel, environment) and one more
	// wheel and environment of the same size: builds b and c share a's
	// tree, so two fit and three do not.
	total := c.entryBytes()
	one := total - c.entryBytes(dirTrees)
	c.mu.Lock()
	c.maxBytes = total + one + one/2
	c.mu.Unlock()

	reqB := f.request(0, f.wheel(t, "evictb", "1.0"))
	b := provision(t, c, reqB)
	b.Release()
	if got := c.entryBytes(); got > total+one+one/2 {
		t.Fatalf("two builds hold %d bytes, more than the %d they should fit in", got, total+one+one/2)
	}
	cc := provision(t, c, f.request(0, f.wheel(t, "evictc", "1.0")))
	cc.Release()

	if got := c.entryBytes(); got > total+one+one/2 {
		t.Errorf("the entries hold %d bytes, more than MaxBytes %d", got, total+one+one/2)
	}
	if _, err := os.Stat(b.Python); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("b's environment, least recently used and not leased, is still there: %v", err)
	}
	if _, err := os.Stat(cc.Python); err != nil {
		t.Errorf("c's environment, just made: %v", err)
	}
	if out := asNobody(t, a.Checkout, a.Python, "-c", "import evicta; print(evicta.VERSION)"); strings.TrimSpace(out) != "1.0" {
		t.Errorf("a's environment, leased, imports %q", out)
	}
	// b again is made anew.
	b2 := provision(t, c, reqB)
	defer b2.Release()
	if b2.Hit {
		t.Error("b's build, evicted, is a hit")
	}
}

// entryBytes is the size of the entries of kinds (all when none).
func (c *Cache) entryBytes(kinds ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for rel, e := range c.entries {
		kind, _, _ := strings.Cut(rel, "/")
		if len(kinds) == 0 || slices.Contains(kinds, kind) {
			n += e.size
		}
	}
	return n
}

// writerFunc is an io.Writer calling its func with every write.
type writerFunc func(p []byte)

func (w writerFunc) Write(p []byte) (int, error) { w(p); return len(p), nil }

// A cache directory another user owns (a /tmp/builds made before the
// worker started) is refused: its owner could swap the builds jobs run.
func TestNewRefusesADirectoryAnotherUserOwns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	f := newFixture(t)
	cfg := f.config(t)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cfg.Dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("New on a directory nobody owns: %v, want it refused naming the owner", err)
	}
}
