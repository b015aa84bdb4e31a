// Package build is the per-host build cache: it implements
// device.Provisioner, making the build a job names (its wheels installed
// in an environment over the harness's interpreter, and its repository's
// test tree at its commit) once per host and handing out leases on it.
//
// # Layout
//
// Under Config.Dir (one worker process at a time: New locks it):
//
//	wheels/<id>/<name>.whl   a wheel from the store, sha256 verified        evictable
//	trees/<id>/              a repository's tree at a commit                evictable
//	envs/<id>/               a venv holding a build's wheels                evictable
//	<kind>/<id>.entry        an entry's size; its mtime is its last use
//	mirrors/<repo>.git       a bare mirror per repository (0700)            kept
//	home/, tmp/              HOME and TMPDIR of the tools the cache runs (0700)
//
// An environment's id hashes its base interpreter (resolved program,
// sys.prefix, version, site-packages) and its wheels' sha256s and names;
// a tree's, its repository and commit. Trees and environments are
// readable by every user and writable by none but the worker's (0755
// directories, files 0644 or 0755): the job's user only reads them.
//
// # Trees
//
// A tree is git archive of the commit from the repository's mirror,
// extracted here: an entry that is not a directory, file or symbolic link
// inside the tree, or would be written through a link, makes the job
// invalid. It is the
// commit's files as git archive gives them: without .git, without
// submodules' content, and with the tree's own export-ignore and
// export-subst attributes applied. A commit the mirror lacks is fetched by
// id, and if the remote refuses that, with its branches and tags; either
// way it is kept under refs/benchfleet/<commit>.
//
// # Environments
//
// An environment is a venv (python -m venv) without system site-packages
// whose site-packages holds the wheels (pip install --no-deps --no-index)
// and a .pth file adding every site-packages directory of the base
// interpreter after its own. It sees exactly what the base sees, the
// wheels first: also when the base is itself a venv's python (a harness
// environment), whose packages a venv made with --system-site-packages
// would not see. When the base can import pip, that pip installs the
// wheels and the environment has none of its own; otherwise venv gives it
// one (ensurepip). It is made in a temporary directory and renamed into
// place; the paths venv and pip wrote into bin/ and pyvenv.cfg are
// rewritten for the final place first, so its scripts run there too.
//
// # Crash safety
//
// Every entry is made in a temporary (".tmp-...") beside its place,
// flushed to disk and renamed into place (a mirror is initialised so
// too); only entries in place are used. Its record is written first, so a
// crash leaves at worst a record without an entry. New removes all
// temporaries, such records, and the git lock files a killed fetch left in
// a mirror. The tools the cache runs die with the worker.
//
// # Eviction
//
// After an entry is made, and when a lease is released, the entries
// nobody leases are evicted least recently used first until the entries
// total at most Config.MaxBytes. A build in use is never evicted, so the
// cache may exceed the bound while leases hold it. Mirrors are never
// evicted: they grow with the repositories' history and are counted by
// Bytes but not bounded.
//
// # Trust
//
// Nothing of the job runs while its build is made: git runs with hooks
// off and, on the tree, without the host's config (so no filter drivers),
// and installing a wheel runs none of its code. The tools get a minimal
// environment of their own (never the worker's credentials; a
// repository's URL reaches git in its environment, not its arguments) and
// the ctx's deadline.
package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/protocol"
)

// Setup results (Config.OnSetup).
const (
	SetupHit   = "hit"
	SetupMiss  = "miss"
	SetupError = "error"
)

// defaultTimeout bounds a Provision whose ctx has no deadline.
const defaultTimeout = 30 * time.Minute

// Config configures a Cache.
type Config struct {
	// Dir is the cache's directory (required); created if missing (0755).
	// It must not be writable by other users, and to serve jobs run as
	// another user every directory above it must be searchable by them
	// (New warns when one is not).
	Dir string
	// MaxBytes bounds the evictable entries (wheels, trees,
	// environments) in bytes; 0 = unbounded.
	MaxBytes int64
	// Repos maps a job's source.repo to the repository the host fetches
	// its commits from: a URL git understands or an absolute path (a
	// repository or a bare mirror). A repo not listed is invalid here.
	// Credentials come from the host's /etc/gitconfig, the worker user's
	// ~/.ssh or the URL, which git gets in its environment (never in its
	// arguments or on disk) and logs and errors show redacted.
	Repos map[string]string
	// Fetch opens a wheel's store key (required): storage.Bucket.Get.
	Fetch func(ctx context.Context, key string) (io.ReadCloser, error)
	// NotFound reports whether an error of Fetch means the key is not in
	// the store (required): errors.Is(err, storage.ErrNotFound).
	NotFound func(error) bool
	// Unavailable reports whether an error of Fetch means the store could
	// not be reached (errors.Is(err, storage.ErrUnavailable)): the fetch
	// fails with a *device.StoreError. Default nil: every error of Fetch
	// but NotFound's is the store's.
	Unavailable func(error) bool
	// FetchTimeout is how long the store has to answer a wheel's fetch
	// and, while the wheel streams, to send its next bytes (default
	// DefaultFetchTimeout, 30s); FetchPerMiB is what each MiB of a wheel
	// adds to the whole fetch's deadline (default DefaultFetchPerMiB, 1s;
	// see FetchDeadline). A fetch past either is a *device.StoreError.
	FetchTimeout, FetchPerMiB time.Duration
	// Git is the git program (default "git", from PATH).
	Git string
	// Log receives the cache's own log (default: none).
	Log zerolog.Logger
	// OnSetup, if set, is called once per Provision with its result
	// (SetupHit, SetupMiss or SetupError) and duration, for metrics.
	OnSetup func(result string, d time.Duration)
}

// Cache is the build cache of one host. It is safe for concurrent use.
type Cache struct {
	dir      string
	maxBytes int64
	repos    map[string]string
	fetchFn  func(context.Context, string) (io.ReadCloser, error)
	notFound func(error) bool
	// unavailableFn is Config.Unavailable.
	unavailableFn             func(error) bool
	fetchTimeout, fetchPerMiB time.Duration
	gitPath                   string
	log                       zerolog.Logger
	onSetup                   func(string, time.Duration)
	lock                      *dirlock.Lock

	mu          sync.Mutex
	entries     map[string]*entry        // by rel
	mirrors     map[string]int64         // sizes by directory name
	flights     map[string]*flight       // makings in progress, by key
	mirrorLocks map[string]chan struct{} // one fetch per mirror at a time
	probes      map[string]probed        // base interpreters, by path
}

var _ device.Provisioner = (*Cache)(nil)

// New validates cfg, creates the cache's directory if missing, locks it
// (a second process on the same directory gets a *dirlock.HeldError),
// removes what a previous process left unfinished and evicts down to
// MaxBytes.
func New(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("build: Config.Dir is required")
	}
	if cfg.Fetch == nil || cfg.NotFound == nil {
		return nil, errors.New("build: Config.Fetch and Config.NotFound are required (the store's Get and its not-found test)")
	}
	if cfg.FetchTimeout < 0 || cfg.FetchPerMiB < 0 {
		return nil, fmt.Errorf("build: Config.FetchTimeout (%s) and Config.FetchPerMiB (%s) must be 0 (the default) or positive", cfg.FetchTimeout, cfg.FetchPerMiB)
	}
	if cfg.FetchTimeout == 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if cfg.FetchPerMiB == 0 {
		cfg.FetchPerMiB = DefaultFetchPerMiB
	}
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("build: Config.MaxBytes must be 0 (unbounded) or positive (got %d)", cfg.MaxBytes)
	}
	for repo, url := range cfg.Repos {
		if err := checkRemote(url); err != nil {
			return nil, fmt.Errorf("build: Config.Repos[%q]: %w", repo, err)
		}
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("build: Config.Dir: %w", err)
	}
	if err := mkdirAll(dir); err != nil {
		return nil, fmt.Errorf("build: Config.Dir: %w", err)
	}
	if info, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("build: Config.Dir: %w", err)
	} else if info.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("build: Config.Dir %s is writable by other users (mode %v): they could replace the builds jobs run", dir, info.Mode().Perm())
	}
	if err := ownedPath(dir); err != nil {
		return nil, fmt.Errorf("build: Config.Dir: %w", err)
	}
	lock, err := dirlock.Acquire(dir, "benchfleet build cache")
	if err != nil {
		return nil, fmt.Errorf("build: Config.Dir: %w", err)
	}
	c := &Cache{
		dir: dir, maxBytes: cfg.MaxBytes, repos: maps.Clone(cfg.Repos),
		fetchFn: cfg.Fetch, notFound: cfg.NotFound, unavailableFn: cfg.Unavailable, gitPath: cfg.Git,
		fetchTimeout: cfg.FetchTimeout, fetchPerMiB: cfg.FetchPerMiB,
		log: cfg.Log.With().Str("component", "build").Logger(), onSetup: cfg.OnSetup, lock: lock,
		entries: map[string]*entry{}, mirrors: map[string]int64{}, flights: map[string]*flight{},
		mirrorLocks: map[string]chan struct{}{}, probes: map[string]probed{},
	}
	if c.gitPath == "" {
		c.gitPath = "git"
	}
	for sub, mode := range map[string]os.FileMode{
		dirWheels: 0o755, dirTrees: 0o755, dirEnvs: 0o755, dirMirrors: 0o700, dirHome: 0o700, dirTmp: 0o700,
	} {
		p := c.path(sub)
		if err := os.Mkdir(p, mode); err != nil && !errors.Is(err, os.ErrExist) {
			lock.Unlock()
			return nil, fmt.Errorf("build: %w", err)
		}
		if err := os.Chmod(p, mode); err != nil {
			lock.Unlock()
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	removed, err := c.recover()
	if err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("build: recover %s: %w", dir, err)
	}
	if d := unreachable(dir); d != "" {
		c.log.Warn().Str("dir", dir).Str("blocked_by", d).Msg("build: a directory above the cache is not searchable by other users: jobs run as another user cannot read its builds")
	}
	c.evict()
	c.log.Info().Str("dir", dir).Int("entries", len(c.entries)).Int64("bytes", c.Bytes()).Int("removed", removed).Msg("build: cache ready")
	return c, nil
}

// mkdirAll makes dir and its missing parents 0755, whatever the umask.
func mkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range missing {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// checkRemote accepts a URL or an absolute path as a repository to fetch
// from.
func checkRemote(url string) error {
	switch {
	case url == "":
		return errors.New("is empty")
	case strings.HasPrefix(url, "-"):
		return fmt.Errorf("%q starts with '-'", url)
	case strings.HasPrefix(url, "/"), strings.Contains(url, "://"):
		return nil
	}
	// scp-like [user@]host:path; git reads a colon before any slash so.
	if i := strings.IndexByte(url, ':'); i > 0 && !strings.Contains(url[:i], "/") {
		return nil
	}
	return fmt.Errorf("%q is a relative path: give an absolute path or a URL", url)
}

// unreachable returns the first directory from / to dir that other users
// cannot search, or "".
func unreachable(dir string) string {
	var blocked string
	for d := dir; ; d = filepath.Dir(d) {
		if info, err := os.Stat(d); err == nil && info.Mode().Perm()&0o001 == 0 {
			blocked = d
		}
		if d == filepath.Dir(d) {
			return blocked
		}
	}
}

// Close releases the cache's directory lock. Leases stay valid on disk;
// Provision may not be called after Close.
func (c *Cache) Close() error {
	c.lock.Unlock()
	return nil
}

// Bytes is what the cache holds now in bytes: its entries (bounded by
// MaxBytes while no lease holds them) and its mirrors (not bounded).
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, e := range c.entries {
		n += e.size
	}
	for _, s := range c.mirrors {
		n += s
	}
	return n
}

// Provision returns a lease on the build req names, making what the cache
// lacks of it: the wheels (fetched and verified first, so a job whose
// wheel is missing or differs is invalid before anything is made), then
// the tree, then the environment. Concurrent calls for one build make it
// once; the calls that waited for it get a lease with Hit set, as does
// every call that found it made. Setup is Provision's wall time. A ctx
// without a deadline is given 30 minutes.
//
// Errors: *device.InvalidError for the job's fault (a wheel missing from
// the store or whose sha256 differs, a repository not in Config.Repos, a
// commit the repository does not have, a tree with unsafe entries);
// *device.BenchmarkError when pip refuses a verified wheel (its output is
// in log); *device.HostError when this host cannot make builds (git or
// venv missing, the mirror's repository unreadable, the disk full); ctx's
// error when it ended; any other error (the store failing) is an
// infrastructure failure worth a retry.
func (c *Cache) Provision(ctx context.Context, req device.BuildRequest, log io.Writer) (*device.BuildLease, error) {
	start := time.Now()
	if log == nil {
		log = io.Discard
	}
	log = quietWriter{log}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	lease, err := c.provision(ctx, req, log)
	err = c.tooBig(err)
	d := time.Since(start)
	result := SetupError
	if err == nil {
		lease.Setup = d
		result = SetupMiss
		if lease.Hit {
			result = SetupHit
		}
	}
	if c.onSetup != nil {
		c.onSetup(result, d)
	}
	ev := c.log.Debug()
	if result == SetupMiss {
		ev = c.log.Info()
	}
	ev.Str("repo", req.Repo).Str("commit", req.Commit).Str("result", result).Dur("setup", d).AnErr("error", err).Msg("build: provision")
	return lease, err
}

// roomAfterFull is how much must be free again, once a failed build's
// temporaries are gone, for a full disk to be the build's doing.
const roomAfterFull = 1 << 30

// tooBig turns a full disk into the job's failure when the job's own
// build filled it: with its temporaries gone, roomAfterFull is free
// again. A disk still full is the host's fault (a job's build could
// otherwise pause every host it reaches, a wheel of a few GiB unpacking
// to more than the disk holds).
func (c *Cache) tooBig(err error) error {
	var host *device.HostError
	if !errors.As(err, &host) || !strings.Contains(host.Reason, " is out of space") {
		return err
	}
	if free := freeBytes(c.dir); free >= roomAfterFull {
		return device.Failed("the job's build does not fit on this host: %s; with its temporaries removed %.1f GiB are free again, so the build itself filled the disk", host.Reason, float64(free)/(1<<30))
	}
	return err
}

func (c *Cache) provision(ctx context.Context, req device.BuildRequest, log io.Writer) (*device.BuildLease, error) {
	wheels, err := checkRequest(req)
	if err != nil {
		return nil, err
	}
	url, ok := c.repos[req.Repo]
	if !ok {
		return nil, device.Invalid("repository %q is not in this host's builds.repos (it has %s): the host cannot fetch its test tree", req.Repo, c.repoNames())
	}
	base, err := c.interpreter(ctx, req.Python)
	if err != nil {
		return nil, err
	}
	envKey, treeKey := envRel(base, wheels), treeRel(req.Repo, req.Commit)
	for {
		if env, tree := c.acquireBoth(envKey, treeKey); env != nil {
			return c.newLease(env, tree, true), nil
		}
		var lease *device.BuildLease
		waiting := func() { logf(log, "waiting for another job making the same build") }
		ran, err := c.once(ctx, "build "+envKey+" "+treeKey, waiting, func() error {
			l, err := c.makeBuild(ctx, req, url, base, wheels, envKey, treeKey, log)
			lease = l
			return err
		})
		if err != nil {
			return nil, err
		}
		if ran {
			return lease, nil
		}
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
	}
}

// makeBuild makes what the build lacks and leases it.
func (c *Cache) makeBuild(ctx context.Context, req device.BuildRequest, url string, base *interp, wheels []protocol.Wheel, envKey, treeKey string, log io.Writer) (*device.BuildLease, error) {
	var paths []string
	releaseWheels := func() {}
	defer func() { releaseWheels() }()
	getWheels := func() error {
		if paths != nil {
			return nil
		}
		p, rel, err := c.fetchWheels(ctx, wheels, log)
		if err != nil {
			return err
		}
		paths, releaseWheels = p, rel
		return nil
	}
	c.mu.Lock()
	haveEnv := c.entries[envKey] != nil
	c.mu.Unlock()
	if !haveEnv {
		if err := getWheels(); err != nil {
			return nil, err
		}
	}
	tree, treeMade, err := c.ensure(ctx, treeKey, func(tmp, _ string) error {
		return c.makeTree(ctx, req.Repo, url, req.Commit, tmp, log)
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(wheels))
	for i, w := range wheels {
		names[i] = w.Name()
	}
	env, envMade, err := c.ensure(ctx, envKey, func(tmp, final string) error {
		if err := getWheels(); err != nil {
			return err
		}
		return c.makeEnv(ctx, req.Python, base, paths, names, tmp, final, log)
	})
	if err != nil {
		c.release(tree)
		return nil, err
	}
	return c.newLease(env, tree, !envMade && !treeMade), nil
}

// newLease hands out the leased env and tree.
func (c *Cache) newLease(env, tree *entry, hit bool) *device.BuildLease {
	var once sync.Once
	return &device.BuildLease{
		Python:   filepath.Join(c.path(env.rel), "bin", "python"),
		Checkout: c.path(tree.rel),
		Hit:      hit,
		Release: func() {
			once.Do(func() {
				c.release(env)
				c.release(tree)
			})
		},
	}
}

// checkRequest validates req (as protocol.Job.Validate does, for callers
// that did not) and returns its wheels sorted by name.
func checkRequest(req device.BuildRequest) ([]protocol.Wheel, error) {
	if req.Repo == "" {
		return nil, device.Invalid("the build names no repository (source.repo)")
	}
	if !protocol.ValidCommit(req.Commit) {
		return nil, device.Invalid("the build's commit %q is not a full commit id (40 or 64 lowercase hex digits)", req.Commit)
	}
	if len(req.Wheels) == 0 || len(req.Wheels) > protocol.MaxWheels {
		return nil, device.Invalid("the build must name 1 to %d wheels (it names %d)", protocol.MaxWheels, len(req.Wheels))
	}
	wheels := slices.Clone(req.Wheels)
	slices.SortFunc(wheels, func(a, b protocol.Wheel) int { return strings.Compare(a.Name(), b.Name()) })
	for i, w := range wheels {
		name := w.Name()
		if !protocol.ValidSHA256(w.SHA256) || w.URL != protocol.BuildKey(w.SHA256, name) ||
			!strings.HasSuffix(name, ".whl") || strings.HasPrefix(name, ".") || len(name) > protocol.MaxWheelName {
			return nil, device.Invalid("wheel %q (sha256 %q) is not a store key %s with its sha256", w.URL, w.SHA256, protocol.BuildKey("<sha256>", "<name>.whl"))
		}
		if i > 0 && wheels[i-1].Name() == name {
			return nil, device.Invalid("the build names wheel %s twice", name)
		}
	}
	return wheels, nil
}

// repoNames lists the configured repositories for an error message.
func (c *Cache) repoNames() string {
	if len(c.repos) == 0 {
		return "none"
	}
	names := make([]string, 0, len(c.repos))
	for r := range c.repos {
		names = append(names, fmt.Sprintf("%q", r))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// quietWriter drops its writer's errors: a job log that fails must not
// fail the tools writing to it.
type quietWriter struct{ w io.Writer }

func (q quietWriter) Write(p []byte) (int, error) {
	_, _ = q.w.Write(p)
	return len(p), nil
}
