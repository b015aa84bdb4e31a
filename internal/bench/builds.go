package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/build"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/internal/buildkit"
	"github.com/benchfleet/benchfleet/protocol"
)

// Defaults of BuildsConfig.
const (
	DefaultBuildsJobs   = 20
	DefaultBuildsRounds = 3
)

// BuildsConfig configures `bench builds`: the build cache (device/build),
// each figure against a baseline measured in the same run:
//
//   - a cold setup (a fresh cache: the repository's mirror, the commit's
//     tree, an environment with the job's wheel) against the same
//     `python -m venv --system-site-packages` plus `pip install --no-deps
//     --no-index` of the wheel run by hand;
//   - a job of a cached build (a hit) against the same job of the host's
//     build, both run by the forge harness runner under real pytest in the
//     box, interleaved: what a hit adds to a job.
//
// The build is made at run time: a git repository (real git) holding a
// minimal forge-shaped perf test, and a wheel holding the module it
// imports. Nothing reaches a package index.
type BuildsConfig struct {
	// Jobs is how many jobs of each build (cached, host) run. Default 20;
	// at most 1000.
	Jobs int
	// Rounds is how many cold setups and setups by hand are timed.
	// Default 3; at most 20.
	Rounds int
	// Python is the harness's interpreter (an absolute path; it needs
	// venv, pip and pytest: Debian's python3-venv, python3-pip,
	// python3-pytest). Default /usr/bin/python3.
	Python string
	// Progress receives a line per step. Default: none.
	Progress io.Writer
	// Log receives the cache's and the runner's logs. Default: none.
	Log zerolog.Logger
}

// Validate fills the defaults and names the first field out of range.
func (c *BuildsConfig) Validate() error {
	if c.Jobs == 0 {
		c.Jobs = DefaultBuildsJobs
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultBuildsRounds
	}
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	switch {
	case c.Jobs < 1 || c.Jobs > 1000:
		return configErr("--jobs %d: want 1..1000", c.Jobs)
	case c.Rounds < 1 || c.Rounds > 20:
		return configErr("--rounds %d: want 1..20", c.Rounds)
	case !filepath.IsAbs(c.Python):
		return configErr("--python %q: want an absolute path", c.Python)
	}
	return nil
}

// BuildsReport is what `bench builds` measured.
type BuildsReport struct {
	// ByHand and Cold are the rounds' setup times: venv and pip run by
	// hand, and a cold Provision (mirror, tree and environment). Lean is
	// the by-hand setup without a pip of the environment's own (venv
	// --without-pip, the base's pip installing into it), as the cache
	// makes them when the base has pip.
	ByHand, Lean, Cold []time.Duration
	// Host and Hit are the jobs' wall times (Runner.Run): of the host's
	// build, and of the cached build.
	Host, Hit []time.Duration
	// HitSetup are the hits' own setup times (the lease).
	HitSetup []time.Duration
	Steal    Steal
}

// ColdRatio is the median cold setup over the median setup by hand.
func (r *BuildsReport) ColdRatio() float64 {
	return Median(r.Cold).Seconds() / Median(r.ByHand).Seconds()
}

// LeanRatio is the median cold setup over the median lean setup by hand.
func (r *BuildsReport) LeanRatio() float64 {
	return Median(r.Cold).Seconds() / Median(r.Lean).Seconds()
}

// HitCost is what a cache hit adds to a job: the median job of the
// cached build less the median job of the host's.
func (r *BuildsReport) HitCost() time.Duration { return Median(r.Hit) - Median(r.Host) }

// The build's parts: a forge-shaped perf test that imports benchwheel (the
// wheel's module; the host's build has the same module in its checkout).
const (
	buildsRepo   = "bench/builds"
	buildsTestID = "forge/test/benchmark/test_bench.py::test_bench"
	buildsModule = "ITER_MS = 2.0\n"
)

var buildsTree = map[string]string{
	"pytest.ini": "[pytest]\nmarkers =\n    perf: a perf benchmark\n",
	"conftest.py": `def pytest_addoption(parser):
    for name in ("--batch-size", "--loop-count", "--warmup-count", "--data-format", "--output-file"):
        parser.addoption(name, default=None)
`,
	"forge/test/benchmark/test_bench.py": `import json, time
import pytest
import benchwheel


@pytest.mark.perf
def test_bench(request):
    opt = request.config.getoption
    batch, loop, warmup = int(opt("--batch-size")), int(opt("--loop-count")), int(opt("--warmup-count"))
    timed = 0.0
    for n in (warmup, loop):
        t0 = time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            time.sleep(benchwheel.ITER_MS / 1000.0)
            print(f"Iteration {i} took {(time.perf_counter() - t) * 1000:.4f} ms", flush=True)
        timed = time.perf_counter() - t0
        print(f"Total time: {timed:.4f}s for {n} iterations", flush=True)
    print("PCC verification passed with PCC=0.990000", flush=True)
    report = {"model": "bench-builds", "batch_size": batch, "pcc": 0.99,
              "measurements": [
                  {"iteration": 1, "step_name": "bench-builds", "measurement_name": "total_samples", "value": batch * loop},
                  {"iteration": 1, "step_name": "bench-builds", "measurement_name": "total_time", "value": timed}],
              "device_info": {"arch": "wormhole"}}
    with open(opt("--output-file"), "w") as f:
        json.dump(report, f)
`,
}

// RunBuilds measures. The work is done in a temporary directory under
// os.TempDir() (searchable by the job user), removed at the end.
func RunBuilds(ctx context.Context, cfg BuildsConfig) (*BuildsReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	steal := stealMeter()
	dir, err := os.MkdirTemp("", "benchfleet-bench-builds-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	sub := func(name string) (string, error) {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
		return d, os.Chmod(d, 0o755)
	}
	names := []string{"repo", "wheels", "host", "rooms", "caches", "byhand"}
	dirs := map[string]string{}
	for _, n := range names {
		if dirs[n], err = sub(n); err != nil {
			return nil, fmt.Errorf("bench builds: %w", err)
		}
	}
	repo, commits, err := buildkit.MakeRepo(dirs["repo"], buildsTree)
	if err != nil {
		return nil, fmt.Errorf("bench builds: %w", err)
	}
	wheelPath, sum, err := buildkit.WriteWheel(dirs["wheels"], "benchwheel", "1.0", map[string]string{"benchwheel.py": buildsModule})
	if err != nil {
		return nil, fmt.Errorf("bench builds: %w", err)
	}
	wheel := protocol.Wheel{URL: protocol.BuildKey(sum, filepath.Base(wheelPath)), SHA256: sum}
	for name, body := range buildsTree {
		if err := writeFile(filepath.Join(dirs["host"], name), body); err != nil {
			return nil, fmt.Errorf("bench builds: host checkout: %w", err)
		}
	}
	if err := writeFile(filepath.Join(dirs["host"], "benchwheel.py"), buildsModule); err != nil {
		return nil, fmt.Errorf("bench builds: host checkout: %w", err)
	}
	newCache := func(d string) (*build.Cache, error) {
		return build.New(build.Config{Dir: d, Repos: map[string]string{buildsRepo: repo}, Log: cfg.Log,
			Fetch: func(_ context.Context, key string) (io.ReadCloser, error) {
				if key != wheel.URL {
					return nil, os.ErrNotExist
				}
				return os.Open(wheelPath)
			},
			NotFound: func(err error) bool { return errors.Is(err, os.ErrNotExist) }})
	}
	req := device.BuildRequest{Python: cfg.Python, Repo: buildsRepo, Commit: commits[0], Wheels: []protocol.Wheel{wheel}}
	rep := &BuildsReport{}

	// Cold setups against the same venv and pip by hand, interleaved.
	for i := range cfg.Rounds {
		fmt.Fprintf(cfg.Progress, "round %d/%d: venv and pip by hand, then a cold setup\n", i+1, cfg.Rounds)
		d, err := byHand(ctx, cfg.Python, filepath.Join(dirs["byhand"], fmt.Sprint(i)), wheelPath, false)
		if err != nil {
			return nil, err
		}
		rep.ByHand = append(rep.ByHand, d)
		if d, err = byHand(ctx, cfg.Python, filepath.Join(dirs["byhand"], fmt.Sprintf("lean-%d", i)), wheelPath, true); err != nil {
			return nil, err
		}
		rep.Lean = append(rep.Lean, d)
		c, err := newCache(filepath.Join(dirs["caches"], fmt.Sprint(i)))
		if err != nil {
			return nil, fmt.Errorf("bench builds: %w", err)
		}
		lease, err := c.Provision(ctx, req, io.Discard)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("bench builds: cold setup: %w", err)
		}
		if lease.Hit {
			c.Close()
			return nil, errors.New("bench builds: a fresh cache reported a hit")
		}
		rep.Cold = append(rep.Cold, lease.Setup)
		lease.Release()
		c.Close()
	}

	// Jobs of the cached build against the same jobs of the host's.
	cache, err := newCache(filepath.Join(dirs["caches"], "jobs"))
	if err != nil {
		return nil, fmt.Errorf("bench builds: %w", err)
	}
	defer cache.Close()
	r, err := harness.New(harness.Forge{}, harness.Config{Workdir: dirs["host"], Python: cfg.Python, TempDir: dirs["rooms"], Builds: cache}, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("bench builds: %w", err)
	}
	dev := device.Device{ID: "bench0", Pool: "n150", Runner: protocol.RunnerForge, Chips: 1, Visible: "0000:00:00.0", Healthy: true}
	job := func(i int, hit bool) *protocol.Job {
		j := &protocol.Job{Schema: protocol.SchemaJob, Run: "bench-builds", Pool: "n150", Runner: protocol.RunnerForge, Priority: protocol.PriorityNormal,
			Benchmark: protocol.Benchmark{Test: buildsTestID, Model: "bench", BatchSize: 1, LoopCount: 5, WarmupCount: 1, DataFormat: protocol.FormatBfloat16},
			Source:    protocol.Source{Repo: buildsRepo, Commit: commits[0]}}
		if hit {
			j.Source.Wheels = []protocol.Wheel{wheel}
		}
		j.ID = fmt.Sprintf("bench-%d-%t", i, hit)
		return j
	}
	// One job makes the build (the miss is the cold figure's); every
	// timed one is a hit.
	if _, err := r.Run(ctx, job(-1, true), dev, &buildRecorder{}); err != nil {
		return nil, fmt.Errorf("bench builds: the first job of the build: %w", err)
	}
	for i := range cfg.Jobs {
		if i%5 == 0 {
			fmt.Fprintf(cfg.Progress, "jobs %d/%d of each build\n", i, cfg.Jobs)
		}
		for _, hit := range []bool{i%2 == 0, i%2 != 0} {
			rec := &buildRecorder{}
			start := time.Now()
			if _, err := r.Run(ctx, job(i, hit), dev, rec); err != nil {
				return nil, fmt.Errorf("bench builds: job %d (cached build %t): %w", i, hit, err)
			}
			d := time.Since(start)
			if !hit {
				rep.Host = append(rep.Host, d)
				continue
			}
			if rec.build == nil || rec.build.Cache != protocol.CacheHit {
				return nil, fmt.Errorf("bench builds: job %d of the cached build was not a hit (%+v)", i, rec.build)
			}
			rep.Hit = append(rep.Hit, d)
			rep.HitSetup = append(rep.HitSetup, time.Duration(rec.build.SetupS*float64(time.Second)))
		}
	}
	rep.Steal = steal()
	return rep, nil
}

// byHand makes an environment as a person would: venv with the system's
// site-packages, then pip of the wheel, no index; lean, the venv gets no
// pip of its own (the system's, seen through its site-packages, installs).
func byHand(ctx context.Context, python, env, wheel string, lean bool) (time.Duration, error) {
	start := time.Now()
	venv := []string{python, "-m", "venv", "--system-site-packages", env}
	if lean {
		venv = append(venv, "--without-pip")
	}
	for _, argv := range [][]string{
		venv,
		{filepath.Join(env, "bin", "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--quiet", wheel},
	} {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + env, "PIP_CONFIG_FILE=/dev/null"}
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("bench builds: by hand: %s: %v: %s", argv[1:3], err, out)
		}
	}
	return time.Since(start), nil
}

func writeFile(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), 0o644)
}

// buildRecorder keeps what the runner says it built.
type buildRecorder struct {
	discard
	build *protocol.BuildInfo
}

func (r *buildRecorder) Build(b protocol.BuildInfo) { r.build = &b }

// Print writes the report as `bench builds` prints it.
func (rep *BuildsReport) Print(w io.Writer) {
	for i := range rep.Cold {
		fmt.Fprintf(w, "round %d  by hand %6.3fs  by hand without pip %6.3fs  cold setup %6.3fs  ratio %.3f\n", i+1,
			rep.ByHand[i].Seconds(), rep.Lean[i].Seconds(), rep.Cold[i].Seconds(), rep.Cold[i].Seconds()/rep.ByHand[i].Seconds())
	}
	fmt.Fprintf(w, "cold setup / by hand: %.3f (median %.3fs / %.3fs, %d rounds; the issue's bound: ≤ 1.3)\n",
		rep.ColdRatio(), Median(rep.Cold).Seconds(), Median(rep.ByHand).Seconds(), len(rep.Cold))
	fmt.Fprintf(w, "cold setup / by hand without a pip of its own (venv --without-pip, the base's pip installs): %.3f (median %.3fs / %.3fs): what the cache adds over the same work (mirror, tree, checks)\n",
		rep.LeanRatio(), Median(rep.Cold).Seconds(), Median(rep.Lean).Seconds())
	fmt.Fprintf(w, "jobs: host build median %.1f ms, cached build median %.1f ms (its setup median %.3f ms), %d of each\n",
		Ms(Median(rep.Host)), Ms(Median(rep.Hit)), Ms(Median(rep.HitSetup)), len(rep.Host))
	fmt.Fprintf(w, "a cache hit adds %+.1f ms to a job (median; the issue's bound: ≤ 50 ms), ratio %.3f\n",
		Ms(rep.HitCost()), Median(rep.Hit).Seconds()/Median(rep.Host).Seconds())
	rep.Steal.print(w)
}
