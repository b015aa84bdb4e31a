package cli_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// buildFarm is a fresh Tenstorrent host whose worker binary provisions the
// builds jobs name: an upstream-shaped tt-forge-onnx repository (real git,
// two commits) as its mirror source, and the forge wheel of each commit
// (built here; its fake device sleeps iterMS per iteration, the speed of
// that build) with loguru beside it.
type buildFarm struct {
	nats, store, cache string
	repo               string
	commits            []string
	wheels             [][]string // per commit: the wheel files to --build-wheel
	cfg, tmp           string
	metrics            string // the worker's /metrics base URL
}

const forgeRepo = "tenstorrent/tt-forge-onnx"

func newBuildFarm(t *testing.T, iterMS ...int) *buildFarm {
	t.Helper()
	buildtest.Python(t)
	srv := fleettest.Server(t)
	dir := buildtest.Dir(t)
	b := &buildFarm{nats: srv.ClientURL(), store: "file://" + filepath.Join(dir, "store"), cache: filepath.Join(dir, "cache"),
		tmp: filepath.Join(dir, "tmp"), cfg: filepath.Join(dir, "worker.yaml")}
	tree := harnesstest.Files(t, "forge", "checkout")
	second := map[string]string{"CHANGES.md": "commit 2 of the test tree\n"}
	b.repo, b.commits = buildtest.Repo(t, tree, second)
	loguruW, _ := buildtest.Wheel(t, t.TempDir(), "loguru", "0.7.2", harnesstest.Files(t, "forge", "site-packages/loguru"))
	for i, ms := range iterMS {
		files := harnesstest.Files(t, "forge", "site-packages/forge")
		fake := files["forge/_fake.py"]
		const knob = `os.environ.get("FAKE_ITER_MS", "2")`
		if !strings.Contains(fake, knob) {
			t.Fatalf("forge/_fake.py no longer reads %s", knob)
		}
		files["forge/_fake.py"] = strings.Replace(fake, knob, fmt.Sprintf(`os.environ.get("FAKE_ITER_MS", "%d")`, ms), 1)
		w, _ := buildtest.Wheel(t, t.TempDir(), "forge", fmt.Sprintf("0.%d.0", i+1), files)
		b.wheels = append(b.wheels, []string{w, loguruW})
	}
	host := harnesstest.NewTTHost(t, 2)
	// The host's own build: its checkout and environment (the forge
	// stand-in installed), what a job without wheels runs.
	ck := harnesstest.NewCheckout(t, "forge", filepath.Join(dir, "host"), false)
	if err := os.Mkdir(b.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b.metrics = "http://" + listen
	writeFile(t, b.cfg, fmt.Sprintf(`nats: %s
store: %s
metrics_listen: %s
id: tt-builds
slots:
  - {pool: n150, runner: forge, devices: ["0", "1"]}
discovery: {tt_smi: %s, dev_root: %s, sysfs_root: %s}
forge:
  workdir: %s
  python: %s
builds:
  cache_dir: %s
  repos:
    %s: %s
`, b.nats, b.store, listen, host.TTSMI, host.DevRoot, host.Sys, ck.Workdir, ck.Python, b.cache, forgeRepo, b.repo))
	return b
}

// submit runs `submit --wait` of the resnet50 perf test with args (the
// build flags) and returns its exit code and output.
func (b *buildFarm) submit(t *testing.T, run string, args ...string) (int, string) {
	t.Helper()
	all := append([]string{"submit", "--nats", b.nats, "--store", b.store, "--pool", "n150", "--runner", "forge",
		"--test", harnesstest.ForgeResNet50, "--model", "resnet50", "--batch-size", "2", "--loop-count", "20", "--warmup-count", "2",
		"--run", run, "--wait", "--timeout", "3m", "--log-level", "warn"}, args...)
	code, out, errOut := run2(t, all...)
	t.Logf("submit %s: exit %d\n%s%s", run, code, out, errOut)
	return code, out + errOut
}

func (b *buildFarm) buildArgs(commit int, repo string) []string {
	args := []string{"--repo", repo, "--commit", b.commits[commit]}
	for _, w := range b.wheels[commit] {
		args = append(args, "--build-wheel", w)
	}
	return args
}

func (b *buildFarm) result(t *testing.T, run string) protocol.Result {
	t.Helper()
	r, ok := queryRun(t, b.store, run)[harnesstest.ForgeResNet50]
	if !ok {
		t.Fatalf("run %s has no result", run)
	}
	return r
}

// Two commits whose wheels differ in speed (10 and 14 ms per iteration)
// give results whose timed loops differ accordingly, each naming its
// commit and its wheels' sha256; the second job of a build is a cache hit
// whose setup is a small fraction of the first's; a job of the host's
// build says so.
func TestBuildsMeasureTheCommitsOwnWheel(t *testing.T) {
	t.Parallel()
	b := newBuildFarm(t, 10, 14)
	wout, _ := startWorkerBinary(t, b.cfg, b.tmp)

	var rs []protocol.Result
	for i := range 2 {
		run := fmt.Sprintf("build-commit-%d", i+1)
		if code, _ := b.submit(t, run, b.buildArgs(i, forgeRepo)...); code != 0 {
			t.Fatalf("commit %d: submit --wait exit %d, want 0\n%s", i+1, code, wout)
		}
		rs = append(rs, b.result(t, run))
	}
	for i, r := range rs {
		bi := r.Build
		if r.Status != protocol.StatusPassed || bi == nil || bi.Kind != protocol.BuildProvisioned || bi.Commit != b.commits[i] ||
			bi.Cache != protocol.CacheMiss || len(bi.Wheels) != 2 || bi.SetupS <= 0 || r.Phases.SetupS != bi.SetupS {
			t.Fatalf("commit %d: %s build %+v phases %+v, want passed on its provisioned build (a miss)", i+1, r.Status, bi, r.Phases)
		}
		if got, want := bi.Wheels[0].SHA256, sha256Of(t, b.wheels[i][0]); got != want || bi.Wheels[0].Name != filepath.Base(b.wheels[i][0]) {
			t.Fatalf("commit %d: wheel %+v, want %s sha256 %s", i+1, bi.Wheels[0], filepath.Base(b.wheels[i][0]), want)
		}
	}
	// The fake device sleeps its build's iteration time: no timed
	// iteration is shorter, and the slower build's fastest iteration is
	// slower than the faster build's by most of the 4 ms (a fastest one
	// overshoots its sleep by little even on a loaded machine).
	fast, slow := rs[0].Measurements.IterationMS, rs[1].Measurements.IterationMS
	t.Logf("timed loop per iteration: commit 1 min %.2f p50 %.2f ms, commit 2 min %.2f p50 %.2f ms", fast.Min, fast.P50, slow.Min, slow.P50)
	if fast.Count != 20 || slow.Count != 20 || fast.Min < 10 || slow.Min < 14 || slow.Min < fast.Min+2 {
		t.Fatalf("timed loops %+v and %+v: want 20 iterations of ≥10 ms and ≥14 ms, the second slower", fast, slow)
	}

	// The same build again: a hit.
	code, _ := b.submit(t, "build-commit-1-again", append(b.buildArgs(0, forgeRepo), "--label", "again=1")...)
	if code != 0 {
		t.Fatalf("second job of the build: exit %d\n%s", code, wout)
	}
	hit := b.result(t, "build-commit-1-again")
	if hit.Build == nil || hit.Build.Cache != protocol.CacheHit || hit.Build.Commit != b.commits[0] {
		t.Fatalf("second job of the build: build %+v, want a cache hit of commit 1", hit.Build)
	}
	ratio := hit.Build.SetupS / rs[0].Build.SetupS
	t.Logf("setup: miss %.3f s, hit %.4f s (%.2f%%)", rs[0].Build.SetupS, hit.Build.SetupS, 100*ratio)
	if ratio >= 0.05 {
		t.Fatalf("a hit's setup %.4f s is %.1f%% of the miss's %.3f s, want under 5%%", hit.Build.SetupS, 100*ratio, rs[0].Build.SetupS)
	}

	// Two misses and a hit, the cache's bytes, the setup phase (counted
	// once each result is durable: a moment after the waiter sees it).
	var why string
	fleettest.Eventually(t, 10*time.Second, "the build metrics", func() bool {
		fams := scrape(t, b.metrics)
		setups, bytes, phases := fams["benchfleet_build_setups_total"], fams["benchfleet_build_cache_bytes"], fams["benchfleet_job_phase_seconds"]
		if setups == nil || bytes == nil || phases == nil {
			why = "missing families"
			return false
		}
		setupPhase := uint64(0)
		for _, m := range phases.GetMetric() {
			if labelValue(m, "phase") == "setup" {
				setupPhase = m.GetHistogram().GetSampleCount()
			}
		}
		why = fmt.Sprintf("setups miss %v hit %v, cache bytes %v, setup phases %d; want 2, 1, > 0, 3",
			sumCounter(setups, "result", "miss"), sumCounter(setups, "result", "hit"), bytes.GetMetric()[0].GetGauge().GetValue(), setupPhase)
		return sumCounter(setups, "result", "miss") == 2 && sumCounter(setups, "result", "hit") == 1 &&
			bytes.GetMetric()[0].GetGauge().GetValue() > 0 && setupPhase == 3
	})
	t.Log("metrics: " + why)

	// No wheels: the host's build, and the verdict says the commit was a label.
	code, out := b.submit(t, "build-host", "--repo", forgeRepo, "--commit", b.commits[1])
	if code != 0 {
		t.Fatalf("host build job: exit %d", code)
	}
	host := b.result(t, "build-host")
	if host.Build == nil || host.Build.Kind != protocol.BuildHost || host.Build.Commit != b.commits[1] || host.Phases.SetupS != 0 {
		t.Fatalf("host build job: build %+v phases %+v, want the host's build labelled with the commit", host.Build, host.Phases)
	}
	if !strings.Contains(out, "ran the host's installed build") {
		t.Fatalf("the verdict of a job that named a commit but ran the host's build does not say so:\n%s", out)
	}
}

// A wheel whose bytes in the store are not its sha256, and a repository
// the host does not know, are refused before anything runs: the job is
// invalid after one attempt and submit --wait exits 1.
func TestBuildsRefuseATamperedWheelAndAnUnknownRepo(t *testing.T) {
	t.Parallel()
	b := newBuildFarm(t, 10)
	wout, _ := startWorkerBinary(t, b.cfg, b.tmp)

	// The forge wheel's object in the store is not the wheel that was
	// built: its key names the honest bytes' sha256.
	sum := sha256Of(t, b.wheels[0][0])
	key := protocol.BuildKey(sum, filepath.Base(b.wheels[0][0]))
	obj := filepath.Join(strings.TrimPrefix(b.store, "file://"), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, []byte("PK\x03\x04 not the wheel that was built"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--repo", forgeRepo, "--commit", b.commits[0], "--wheel", key, "--build-wheel", b.wheels[0][1]}
	if code, _ := b.submit(t, "build-tampered", args...); code != 1 {
		t.Fatalf("tampered wheel: submit --wait exit %d, want 1\n%s", code, wout)
	}
	r := b.result(t, "build-tampered")
	if r.Status != protocol.StatusFailed || r.Error == nil || r.Error.Class != protocol.ClassInvalid || r.Attempt != 1 ||
		!strings.Contains(r.Error.Message, sum) || r.Phases.CompileS != 0 {
		t.Fatalf("tampered wheel: %s attempt %d %+v phases %+v, want invalid naming the sha256 after one attempt, nothing run", r.Status, r.Attempt, r.Error, r.Phases)
	}

	// (The forge wheel's key holds the tampered bytes: loguru's alone.)
	unknown := []string{"--repo", "someone/else", "--commit", b.commits[0], "--build-wheel", b.wheels[0][1]}
	if code, _ := b.submit(t, "build-unknown-repo", unknown...); code != 1 {
		t.Fatalf("unknown repo: submit --wait exit %d, want 1", code)
	}
	r = b.result(t, "build-unknown-repo")
	if r.Status != protocol.StatusFailed || r.Error == nil || r.Error.Class != protocol.ClassInvalid || r.Attempt != 1 ||
		!strings.Contains(r.Error.Message, "someone/else") || r.Phases.CompileS != 0 {
		t.Fatalf("unknown repo: %s attempt %d %+v, want invalid naming the repo after one attempt", r.Status, r.Attempt, r.Error)
	}
}

// A worker SIGKILLed while it provisions a build leaves nothing a later
// job uses half-made: the job comes back to the restarted worker, which
// makes the build again and passes it.
func TestBuildsWorkerKilledWhileProvisioning(t *testing.T) {
	t.Parallel()
	b := newBuildFarm(t, 10)
	// A claim of the killed worker comes back after 10 s, not the default minute.
	if code, out, errOut := run2(t, "topology", "apply", "--nats", b.nats, "--ack-wait", "10s"); code != 0 {
		t.Fatalf("topology apply: exit %d\n%s%s", code, out, errOut)
	}
	cmd, wout := startWorkerProcess(t, b.cfg, b.tmp)
	done := make(chan int, 1)
	go func() {
		code, _ := b.submit(t, "build-killed", b.buildArgs(0, forgeRepo)...)
		done <- code
	}()
	// The environment is being made: a temporary beside its place.
	fleettest.Eventually(t, 2*time.Minute, "the build's environment half-made", func() bool {
		tmps, _ := filepath.Glob(filepath.Join(b.cache, "envs", ".tmp-*"))
		return len(tmps) > 0
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("worker killed while provisioning:\n%s", tail(wout.String(), 20))
	startWorkerBinary(t, b.cfg, b.tmp)
	if code := <-done; code != 0 {
		t.Fatalf("submit --wait exit %d after the worker was killed and restarted, want 0", code)
	}
	r := b.result(t, "build-killed")
	if r.Status != protocol.StatusPassed || r.Build == nil || r.Build.Cache != protocol.CacheMiss || r.Attempt != 2 {
		t.Fatalf("%s attempt %d build %+v, want passed at attempt 2 on a build made again", r.Status, r.Attempt, r.Build)
	}
	if tmps, _ := filepath.Glob(filepath.Join(b.cache, "*", ".tmp-*")); len(tmps) > 0 {
		t.Fatalf("temporaries left in the cache: %v", tmps)
	}
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// startWorkerProcess is startWorkerBinary for a worker the test kills
// itself: it returns the process (killed at the end if still running).
func startWorkerProcess(t *testing.T, cfg, tmpdir string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, out := startWorkerCmd(t, cfg, tmpdir)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, out
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// bench builds measures both figures in one run and prints them.
func TestBenchBuildsReportsBothRatios(t *testing.T) {
	t.Parallel()
	buildtest.Python(t)
	code, out, errOut := run2(t, "bench", "builds", "--jobs", "2", "--rounds", "1", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("bench builds: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"cold setup / by hand: ", "a cache hit adds ", "jobs: host build median "} {
		if !strings.Contains(out, want) {
			t.Fatalf("bench builds printed no %q:\n%s", want, out)
		}
	}
	t.Log(out)
}
