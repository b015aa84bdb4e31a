package harness_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// requireRoot skips a test of the job user's box where the worker cannot
// switch users (make test and CI run as root).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the job user's box needs a root worker")
	}
}

// The code under test looks for the worker's secrets everywhere it can:
// its environment, the worker's /proc environ, a credentials file, the
// spool. It finds none, and what it tries to drop into the spool is not
// there.
func TestHostileHarnessFindsNoSecret(t *testing.T) {
	requireRoot(t)
	const secret = "s3cret-4242"
	for _, k := range []string{"NATS_PASSWORD", "AWS_SECRET_ACCESS_KEY", "NATS_TOKEN"} {
		t.Setenv(k, secret)
	}
	dir := t.TempDir()
	harnesstest.Traversable(t, dir)
	creds := filepath.Join(dir, "worker.creds")
	if err := os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := file.NewBucket(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	spoolDir := filepath.Join(dir, "spool")
	if _, err := spool.NewWithConfig(spool.Config{Dir: spoolDir, Bucket: store, Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	dump := harnesstest.DumpPath(t)
	body := `found = {}
def look(name, path):
    try:
        with open(path, "rb") as f:
            found[name] = f.read(1 << 20).decode("utf-8", "replace")
    except Exception as e:
        found[name] = "denied: " + type(e).__name__
found["env"] = json.dumps(dict(os.environ))
look("parent environ", "/proc/%d/environ" % os.getppid())
look("creds", ` + strconv.Quote(creds) + `)
try:
    with open(` + strconv.Quote(filepath.Join(spoolDir, "ready", "forged.json")) + `, "w") as f:
        f.write('{"schema":"benchfleet.result/v1","status":"passed"}')
    found["spool"] = "written"
except Exception as e:
    found["spool"] = "denied: " + type(e).__name__
found["uid"] = os.getuid()
with open(` + strconv.Quote(dump) + `, "w") as f:
    json.dump(found, f)
`
	r, _, _ := runnerFor(t, "forge", harnesstest.NewHostile(t, body), map[string]string{"FAKE_ENV_DUMP": dump})
	_, _ = r.Run(t.Context(), job(harnesstest.ForgeResNet50, 1, 2, 1), n150, &recorder{})
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var found map[string]any
	if err := json.Unmarshal(data, &found); err != nil {
		t.Fatal(err)
	}
	for k, v := range found {
		if strings.Contains(toString(v), secret) {
			t.Errorf("the harness found the secret in %s", k)
		}
	}
	if found["uid"] == float64(0) {
		t.Errorf("the harness ran as root")
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(toString(found["env"])), &env); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("job-%.0f", found["uid"]); env["USER"] != want || env["LOGNAME"] != want {
		t.Errorf("the harness's USER %q LOGNAME %q, want its own user's name", env["USER"], env["LOGNAME"])
	}
	if s := toString(found["spool"]); !strings.HasPrefix(s, "denied") {
		t.Errorf("the harness wrote into the spool: %s", s)
	}
	if entries, _ := os.ReadDir(filepath.Join(spoolDir, "ready")); len(entries) != 0 {
		t.Errorf("the spool's ready/ holds %d entries the harness left", len(entries))
	}
	t.Logf("what the harness found: %v", found)
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// One job cannot compromise the next on the same board: a pytest.py it
// plants in its working directory is not imported by the next job, and a
// daemon it leaves (setsid, double fork) is dead within 5 s of its end.
func TestHostileJobDoesNotReachTheNext(t *testing.T) {
	requireRoot(t)
	dump := harnesstest.DumpPath(t)
	pidFile := dump + ".pid"
	// The daemon's pid is its sandbox's; the host finds it by this name.
	marker := fmt.Sprintf("benchfleet-daemon-%d", time.Now().UnixNano())
	body := `with open("pytest.py", "w") as f:
    f.write("print('PLANTED pytest.py RAN')\n")
import subprocess
subprocess.Popen(["setsid", "sh", "-c", "(exec -a ` + marker + ` sleep 300) & echo $! > ` + pidFile + `; wait"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(500):
    if os.path.exists(` + strconv.Quote(pidFile) + `) and open(` + strconv.Quote(pidFile) + `).read().strip():
        break
    time.sleep(0.01)
with open(` + strconv.Quote(dump) + `, "w") as f:
    json.dump({"cwd": os.getcwd()}, f)
`
	hostile := harnesstest.NewHostile(t, body)
	c := harnesstest.NewCheckout(t, "forge", "", false)
	// One runner, one board, both jobs in turn: the hostile checkout's
	// interpreter first, then the real tree's, in the same temp dir.
	tmp := filepath.Join(t.TempDir(), "harness")
	r1, _, _ := runnerIn(t, "forge", hostile, tmp, dump)
	if _, err := r1.Run(t.Context(), job(harnesstest.ForgeResNet50, 1, 2, 1), n150, &recorder{}); err == nil {
		t.Fatal("the hostile job passed")
	}
	ended := time.Now()
	if _, err := readPid(pidFile); err != nil {
		t.Fatalf("the hostile job left no daemon pid: %v", err)
	}
	for {
		pids := processesNamed(marker)
		if len(pids) == 0 {
			break
		}
		if time.Since(ended) > 5*time.Second {
			t.Fatalf("the job's daemon %v is alive 5 s after its job", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the daemon died %s after its job", time.Since(ended).Round(time.Millisecond))

	r2, _, _ := runnerIn(t, "forge", c, tmp, "")
	rec := &recorder{}
	if _, err := r2.Run(t.Context(), job(harnesstest.ForgeResNet50, 1, 2, 1), n150, rec); err != nil {
		t.Fatalf("the next job: %v", err)
	}
	log, _ := os.ReadFile(rec.artifacts[harness.ArtifactLog])
	if strings.Contains(string(log), "PLANTED") {
		t.Fatalf("the next job imported the planted pytest.py:\n%s", log)
	}
}

func runnerIn(t *testing.T, kind string, c *harnesstest.Checkout, tmp, dump string) (*harness.Runner, *harnesstest.Checkout, string) {
	t.Helper()
	cfg := harness.Config{Workdir: c.Workdir, Python: c.Python, TempDir: tmp}
	if dump != "" {
		cfg.Box.Writable = []string{filepath.Dir(dump)} // the test's side channel out of the sandbox
	}
	r, err := harness.New(profiles[kind], cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return r, c, tmp
}

var profiles = map[string]harness.Profile{"forge": harness.Forge{}, "tt-xla": harness.TTXLA{}}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// processesNamed lists the live processes whose argv[0] is name.
func processesNamed(name string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(string(cmd), name+"\x00") && !dead(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// dead reports whether pid is gone or a zombie.
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// burstTest is a pull request's test module for the forge harness, run by
// real pytest: it prints its warmup as it goes, then runs its timed loop
// (2 s) with the lines held back, and prints them all in one burst at the
// end, each claiming 10 ms, with a Total line and a report to match: a
// loop twice as fast as the one it ran.
const burstTest = `import json, time
import pytest


@pytest.mark.perf
def test_burst(request):
    opt = request.config.getoption
    batch, loop, warmup = opt("--batch-size"), opt("--loop-count"), opt("--warmup-count")
    print("Compiling ONNX model with Forge (burst)...", flush=True)
    for i in range(warmup):
        time.sleep(0.01)
        print(f"Iteration {i} took 10.0000 ms", flush=True)
    print(f"Total time: {warmup * 0.01:.4f}s for {warmup} iterations", flush=True)
    time.sleep(2.0)  # the timed loop that ran, its lines held back
    lines = [f"Iteration {i} took 10.0000 ms" for i in range(loop)]
    lines.append(f"Total time: {loop * 0.01:.4f}s for {loop} iterations")
    print("\n".join(lines), flush=True)
    print("PCC verification passed with PCC=0.990000", flush=True)
    with open(opt("--output-file"), "w") as f:
        json.dump({"model": "burst", "batch_size": batch, "pcc": 0.99,
                   "measurements": [
                       {"iteration": 1, "step_name": "burst", "measurement_name": "total_samples", "value": batch * loop},
                       {"iteration": 1, "step_name": "burst", "measurement_name": "total_time", "value": loop * 0.01}],
                   "device_info": {"arch": "wormhole"}}, f)
`

// A test that holds its timed loop's Iteration lines back and prints them
// in one burst (under real pytest, through the forge harness's conftests)
// fails its job as a report its printed lines cannot vouch for; the same
// checkout's honest test passes.
func TestBurstOfIterationLinesFailsTheJob(t *testing.T) {
	t.Parallel()
	c := harnesstest.NewCheckout(t, "forge", "", false)
	if err := os.WriteFile(filepath.Join(c.Workdir, "forge", "test", "benchmark", "test_burst.py"), []byte(burstTest), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _, _ := runnerFor(t, "forge", c, nil)
	rec := &recorder{}
	out, err := r.Run(t.Context(), job("forge/test/benchmark/test_burst.py::test_burst", 4, 100, 4), n150, rec)
	if !device.IsBenchmark(err) || !strings.Contains(err.Error(), "burst") {
		var sps float64
		if out != nil {
			sps = out.Measurements.SamplesPerSec
		}
		t.Fatalf("err %v (samples/sec %g), want a benchmark failure naming the burst", err, sps)
	}
	if _, err := r.Run(t.Context(), job(harnesstest.ForgeResNet50, 4, 100, 4), n150, &recorder{}); err != nil {
		t.Fatalf("the honest test of the same checkout: %v", err)
	}
}
