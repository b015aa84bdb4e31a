package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// startWorkerBinary runs the real `benchfleet worker --config cfg` with
// TMPDIR set to tmpdir (a fresh host: the directory exists and is empty)
// and a clean environment, and stops it when the test ends.
func startWorkerBinary(t *testing.T, cfg, tmpdir string) (*bytes.Buffer, func()) {
	t.Helper()
	cmd, out := startWorkerCmd(t, cfg, tmpdir)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("worker output:\n%s", out.String())
			}
		})
	}
	t.Cleanup(stop)
	return out, stop
}

// startWorkerCmd starts the real `benchfleet worker --config cfg` with
// TMPDIR set to tmpdir and a clean environment; the caller stops it.
func startWorkerCmd(t *testing.T, cfg, tmpdir string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(benchfleetBinary(t), "worker", "--config", cfg, "--log-format", "json", "--ack-wait", "10s")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + tmpdir,
		"AWS_EC2_METADATA_DISABLED=true"}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

func queryRun(t *testing.T, store, run string) map[string]protocol.Result {
	t.Helper()
	code, stdout, stderr := run2(t, "results", "query", "--store", store, "--run", run, "--format", "json")
	if code != 0 {
		t.Fatalf("results query: exit %d: %s", code, stderr)
	}
	var rs []protocol.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	out := map[string]protocol.Result{}
	for _, r := range rs {
		out[r.Benchmark.Test] = r
	}
	return out
}

var run2 = run

// The real worker binary with a static forge slot on a fresh host (an
// empty TMPDIR, no directory pre-created): a parametrized upstream id runs
// to passed on the first attempt with the warmup and the timed loop apart;
// a not-found id and a deselected id end as invalid jobs after one attempt
// and `submit --wait` exits 1. Then a slot configured for the tt-xla harness
// runs a tt-xla job through the same worker binary.
func TestWorkerBinaryRunsUpstreamHarnessesOnAFreshHost(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	dir := t.TempDir()
	storeURL := "file://" + filepath.Join(dir, "store")
	host := harnesstest.NewTTHost(t, 2)
	forgeCk := harnesstest.NewCheckout(t, "forge", filepath.Join(dir, "forge"), false)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	writeFile(t, cfg, fmt.Sprintf(`nats: %s
store: %s
id: tt-fresh
slots:
  - {pool: n150, runner: forge, devices: ["0"]}
discovery: {tt_smi: %s, dev_root: %s, sysfs_root: %s}
forge:
  workdir: %s
  python: %s
  env: {FAKE_ITER_MS: "10"}
`, srv.ClientURL(), storeURL, host.TTSMI, host.DevRoot, host.Sys, forgeCk.Workdir, forgeCk.Python))
	wout, stopForge := startWorkerBinary(t, cfg, tmp)

	submit := func(runID, test string, extra ...string) int {
		args := append([]string{"submit", "--nats", srv.ClientURL(), "--store", storeURL, "--pool", "n150", "--runner", extra[0],
			"--test", test, "--model", "resnet50", "--batch-size", "2", "--loop-count", "12", "--warmup-count", "4",
			"--run", runID, "--wait", "--timeout", "2m", "--log-level", "warn"}, extra[1:]...)
		code, out, errOut := run(t, args...)
		t.Logf("submit %s: exit %d\n%s%s", test, code, out, errOut)
		return code
	}
	if code := submit("fresh-pass", harnesstest.ForgeResNet50, "forge"); code != 0 {
		t.Fatalf("parametrized id: exit %d, want 0\n%s", code, wout)
	}
	r := queryRun(t, storeURL, "fresh-pass")[harnesstest.ForgeResNet50]
	if r.Status != protocol.StatusPassed || r.Attempt != 1 {
		t.Fatalf("status %s attempt %d (%+v), want passed at attempt 1", r.Status, r.Attempt, r.Error)
	}
	// timing_s is the timed loop's "Total time" line (4 decimals), the
	// report's total_time the same clock at full precision.
	if r.Phases.WarmupS <= 0 || r.Phases.TimingS == r.Phases.WarmupS || math.Abs(r.Phases.TimingS-r.Measurements.TotalTimeS) > 0.0001 ||
		r.Measurements.IterationMS.Count != 12 {
		t.Fatalf("phases %+v measurements %+v: want warmup (4 iterations) and timing (12) apart", r.Phases, r.Measurements)
	}
	for _, tc := range []struct{ run, test, why string }{
		{"fresh-notfound", harnesstest.ForgeMissing, "not found"},
		{"fresh-deselected", harnesstest.ForgeUnmarked, "exit 5"},
	} {
		if code := submit(tc.run, tc.test, "forge"); code != 1 {
			t.Fatalf("%s: submit --wait exit %d, want 1", tc.test, code)
		}
		r := queryRun(t, storeURL, tc.run)[tc.test]
		if r.Status != protocol.StatusFailed || r.Error == nil || r.Error.Class != protocol.ClassInvalid || r.Attempt != 1 ||
			!strings.Contains(r.Error.Message, tc.why) {
			t.Fatalf("%s: %s attempt %d %+v, want invalid after one attempt (%s)", tc.test, r.Status, r.Attempt, r.Error, tc.why)
		}
	}

	// tt-xla: the same worker binary with a slot configured for that
	// harness, on the second board. The forge worker stops first: a pool's
	// boards run one harness (a job for another runner is invalid on a slot).
	stopForge()
	xlaCk := harnesstest.NewCheckout(t, "tt-xla", filepath.Join(dir, "xla"), false)
	xcfg := filepath.Join(dir, "xla.yaml")
	writeFile(t, xcfg, fmt.Sprintf(`nats: %s
store: %s
id: tt-xla-host
slots:
  - {pool: n150, runner: tt-xla, devices: ["1"]}
discovery: {tt_smi: %s, dev_root: %s, sysfs_root: %s}
harnesses:
  tt-xla: {workdir: %s, python: %s, env: {FAKE_ITER_MS: "5", FAKE_XLA_LOOP: "16"}}
`, srv.ClientURL(), storeURL, host.TTSMI, host.DevRoot, host.Sys, xlaCk.Workdir, xlaCk.Python))
	xout, _ := startWorkerBinary(t, xcfg, tmp)
	if code := submit("fresh-xla", harnesstest.XLAResNet50, "tt-xla", "--batch-size", "8"); code != 0 {
		t.Fatalf("tt-xla job: exit %d, want 0\n%s", code, xout)
	}
	x := queryRun(t, storeURL, "fresh-xla")[harnesstest.XLAResNet50]
	if x.Status != protocol.StatusPassed || x.Runner != protocol.RunnerTTXLA || x.Device.ID != "tt1" ||
		x.Measurements.TotalSamples != 8*16 || x.PCC != (protocol.PCC{Value: 0.95, Min: 0.9, Passed: true}) || x.Measurements.IterationMS.Count != 16 {
		t.Fatalf("tt-xla result: %s runner %s device %s %+v pcc %v", x.Status, x.Runner, x.Device.ID, x.Measurements, x.PCC)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
