package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/protocol"
)

type recorder struct {
	mu        sync.Mutex
	phases    []string
	lines     []string
	artifacts map[string]string
}

func (r *recorder) Phase(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, name)
}

func (r *recorder) Log(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

func (r *recorder) Artifact(name, path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.artifacts == nil {
		r.artifacts = map[string]string{}
	}
	r.artifacts[name] = path
}

func newRunner(t *testing.T, kind string, broken bool, env map[string]string) (*harness.Runner, *harnesstest.Checkout, string) {
	t.Helper()
	c := harnesstest.NewCheckout(t, kind, "", broken)
	return runnerFor(t, kind, c, env)
}

func runnerFor(t *testing.T, kind string, c *harnesstest.Checkout, env map[string]string) (*harness.Runner, *harnesstest.Checkout, string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "not", "yet", "there") // a fresh host: nothing pre-created
	k, ok := device.Lookup(kind)
	if !ok {
		t.Fatalf("kind %s not registered", kind)
	}
	st := device.Settings{Workdir: c.Workdir, Python: c.Python, Env: env, TempDir: tmp}
	if dump := env["FAKE_ENV_DUMP"]; dump != "" {
		st.Box.Writable = []string{filepath.Dir(dump)} // the test's side channel out of the sandbox
	}
	r, err := k.New(st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return r.(*harness.Runner), c, tmp
}

func job(test string, batch, loop, warmup int) *protocol.Job {
	return &protocol.Job{ID: "j1", Run: "r1", Pool: "n150", Runner: protocol.RunnerForge,
		Benchmark: protocol.Benchmark{Test: test, Model: "resnet50", BatchSize: batch, LoopCount: loop,
			WarmupCount: warmup, DataFormat: protocol.FormatBfloat16}}
}

func xlaJob(test string, batch int) *protocol.Job {
	j := job(test, batch, 16, 0)
	j.Runner = protocol.RunnerTTXLA
	return j
}

// n150 is a board the tools address by its PCI address.
const n150BDF = "0000:03:00.0"

var n150 = device.Device{ID: "tt2", Pool: "n150", Arch: "wormhole", Chips: 1, Visible: n150BDF}

var totalLine = regexp.MustCompile(`^Total time: ([0-9.]+)s for (\d+) iterations$`)

// printedTotals returns the "Total time" lines of the log in order.
func printedTotals(t *testing.T, path string) (secs []float64, n []int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range regexp.MustCompile(`\r?\n`).Split(string(data), -1) {
		if m := totalLine.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			k, _ := strconv.Atoi(m[2])
			secs, n = append(secs, v), append(n, k)
		}
	}
	return secs, n
}

// The upstream harness prints the same lines for the warmup as for the
// timed loop: phases and iteration statistics must keep them apart.
func TestForgeParametrizedIDWarmupAndTimedLoopApart(t *testing.T) {
	t.Parallel()
	r, c, tmp := newRunner(t, "forge", false, map[string]string{"FAKE_ITER_MS": "20"})
	rec := &recorder{}
	out, err := r.Run(t.Context(), job(harnesstest.ForgeResNet50, 4, 10, 5), n150, rec)
	if err != nil {
		t.Fatal(err)
	}
	secs, n := printedTotals(t, rec.artifacts[harness.ArtifactLog])
	if len(secs) != 2 || n[0] != 5 || n[1] != 10 {
		t.Fatalf("log has Total lines %v for %v iterations, want warmup 5 then 10", secs, n)
	}
	if out.Phases == nil || out.Phases.WarmupS != secs[0] || out.Phases.TimingS != secs[1] {
		t.Fatalf("phases %+v, want warmup_s %v and timing_s %v as printed", out.Phases, secs[0], secs[1])
	}
	if out.Measurements.IterationMS.Count != 10 {
		t.Fatalf("iteration stats %+v, want the 10 timed iterations only", out.Measurements.IterationMS)
	}
	if out.Measurements.TotalSamples != 40 || math.Abs(out.Measurements.SamplesPerSec-40/out.Measurements.TotalTimeS) > 1e-9 {
		t.Fatalf("measurements %+v", out.Measurements)
	}
	if out.PCCValue != 0.998765 || !out.PCCJudged || out.Arch != "wormhole" || out.Upstream != harness.ArtifactReport {
		t.Fatalf("outcome %+v", out)
	}
	if out.Report == nil || out.Report.Model != "onnx_resnet_resnet_50_hf_cv_image_cls_hf" || out.Measurements.BatchSize != 4 || len(out.Notes) != 0 {
		t.Fatalf("report %+v, measurements %+v, notes %q", out.Report, out.Measurements, out.Notes)
	}
	// The upstream conftest's marker file lands in the job's own working
	// directory, which is gone with the job.
	work := filepath.Join(filepath.Dir(rec.artifacts[harness.ArtifactLog]), "work")
	if !strings.HasPrefix(work, tmp) {
		t.Fatalf("job working directory %s outside the runner's %s", work, tmp)
	}
	for _, d := range []string{work, filepath.Join(filepath.Dir(work), "out")} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the job's %s outlived it: %v", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Workdir, ".pytest_current_test_executing")); err == nil {
		t.Fatal("marker written into the shared checkout")
	}
	if want := []string{device.PhaseCompile, device.PhaseWarmup, device.PhaseTiming, device.PhasePCC}; !equal(rec.phases, want) {
		t.Fatalf("phases %v, want %v", rec.phases, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestForgeOutcomesFromWhatPytestPrinted(t *testing.T) {
	t.Parallel()
	good, _, _ := newRunner(t, "forge", false, nil)
	broken, _, _ := newRunner(t, "forge", true, nil)
	lowPCC, _, _ := newRunner(t, "forge", false, map[string]string{"FAKE_PCC": "0.41"})
	watchdog, _, _ := newRunner(t, "forge", false, map[string]string{"FAKE_HANG_DEVICES": n150BDF, "FAKE_WATCHDOG_SCALE": "0.0005"})
	for _, tc := range []struct {
		name  string
		r     *harness.Runner
		job   *protocol.Job
		check func(error) bool
		what  string
	}{
		{"not found", good, job(harnesstest.ForgeMissing, 1, 2, 1), device.IsInvalid, "invalid"},
		{"deselected", good, job(harnesstest.ForgeUnmarked, 1, 2, 1), device.IsInvalid, "invalid"},
		{"usage error", good, job(harnesstest.ForgeResNet50, 0, 2, 1), device.IsInvalid, "invalid"},
		{"conftest import error", broken, job(harnesstest.ForgeResNet50, 1, 2, 1), isHost, "host fault"},
		{"pcc below", lowPCC, job(harnesstest.ForgeResNet50, 1, 2, 1), device.IsBenchmark, "benchmark failure"},
		{"watchdog", watchdog, job(harnesstest.ForgeResNet50, 1, 2, 1), device.IsHang, "hang"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			_, err := tc.r.Run(t.Context(), tc.job, n150, rec)
			if err == nil || !tc.check(err) {
				t.Fatalf("err %v, want a %s", err, tc.what)
			}
			if tc.name == "watchdog" {
				// pytest's faulthandler on the watchdog's SIGABRT, for real.
				if log, _ := os.ReadFile(rec.artifacts[harness.ArtifactLog]); !strings.Contains(string(log), "Fatal Python error: Aborted") {
					t.Fatalf("log of the aborted harness lacks faulthandler's line:\n%s", log)
				}
			}
		})
	}
}

func isHost(err error) bool {
	var h *device.HostError
	return errors.As(err, &h)
}

func TestEnvAllowlistKeepsSecretsFromTheHarness(t *testing.T) {
	for k, v := range map[string]string{"NATS_PASSWORD": "s3cret", "NATS_TOKEN": "tok", "AWS_SECRET_ACCESS_KEY": "aws",
		"BENCHFLEET_STORE": "s3://x", "TT_METAL_HOME": "/opt/tt-metal", "TTFORGE_TOOLCHAIN_DIR": "/opt/ttforge-toolchain",
		"TTMLIR_TOOLCHAIN_DIR": "/opt/ttmlir-toolchain", "TTXLA_ENV_ACTIVATED": "1"} {
		t.Setenv(k, v)
	}
	dump := harnesstest.DumpPath(t)
	r, c, _ := newRunner(t, "forge", false, map[string]string{"FAKE_ENV_DUMP": dump, "HF_HOME": "/mnt/hf"})
	if _, err := r.Run(t.Context(), job(harnesstest.ForgeResNet50, 1, 2, 1), n150, &recorder{}); err != nil {
		t.Fatal(err)
	}
	env := harnesstest.ReadDump(t, dump).Env
	for _, k := range []string{"NATS_PASSWORD", "NATS_TOKEN", "AWS_SECRET_ACCESS_KEY", "BENCHFLEET_STORE"} {
		if _, ok := env[k]; ok {
			t.Errorf("harness sees %s", k)
		}
	}
	for k, want := range map[string]string{"TT_VISIBLE_DEVICES": n150BDF, "HF_HOME": "/mnt/hf", "TT_METAL_HOME": "/opt/tt-metal",
		"PYTHONPATH": c.Workdir, "TTFORGE_TOOLCHAIN_DIR": "/opt/ttforge-toolchain", "TTMLIR_TOOLCHAIN_DIR": "/opt/ttmlir-toolchain",
		"TTXLA_ENV_ACTIVATED": "1", "ARCH_NAME": "wormhole_b0"} {
		if env[k] != want {
			t.Errorf("harness env %s=%q, want %q", k, env[k], want)
		}
	}
}

// forge's watchdog reads .test_durations from its working directory: the
// job's must have the checkout's, or a hang is caught after the 1800 s
// default instead of 2x the recorded duration.
func TestForgeWatchdogSeesTestDurations(t *testing.T) {
	t.Parallel()
	dump := harnesstest.DumpPath(t)
	r, c, _ := newRunner(t, "forge", false, map[string]string{"FAKE_ENV_DUMP": dump})
	if _, err := r.Run(t.Context(), job(harnesstest.ForgeResNet50, 1, 2, 1), n150, &recorder{}); err != nil {
		t.Fatal(err)
	}
	d := harnesstest.ReadDump(t, dump)
	var durations map[string]float64
	data, err := os.ReadFile(filepath.Join(c.Workdir, ".test_durations"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &durations); err != nil {
		t.Fatal(err)
	}
	recorded, ok := durations[harnesstest.ForgeResNet50]
	if !ok {
		t.Fatalf("the checkout's .test_durations has no %s", harnesstest.ForgeResNet50)
	}
	if !d.TestDurationsFound || d.WatchdogTimeoutS != max(2*recorded, 300) {
		t.Fatalf("watchdog found .test_durations %v with timeout %v s, want it found with %v s (2x %v); cwd %s",
			d.TestDurationsFound, d.WatchdogTimeoutS, max(2*recorded, 300), recorded, d.Cwd)
	}
	if strings.HasPrefix(d.Cwd, c.Workdir) {
		t.Fatalf("the harness ran in the checkout (%s)", d.Cwd)
	}
}

// tt-xla run as its CI runs it, under real pytest: --confcutdir keeps
// tests/conftest.py out, venv/activate's PYTHONPATH resolves infra and
// third_party, the harness judges its own PCC (0.95 against resnet50's
// 0.90), and the batch recorded is the one its test fixed.
func TestTTXLAPassesByItsOwnCheck(t *testing.T) {
	t.Parallel()
	dump := harnesstest.DumpPath(t)
	r, c, _ := newRunner(t, "tt-xla", false, map[string]string{"FAKE_XLA_LOOP": "16", "FAKE_PCC": "0.95", "FAKE_ENV_DUMP": dump})
	rec := &recorder{}
	out, err := r.Run(t.Context(), xlaJob(harnesstest.XLAResNet50, 16), n150, rec)
	if err != nil {
		t.Fatal(err)
	}
	if out.PCCValue != 0.95 || out.PCCRequired != 0.90 || !out.PCCJudged {
		t.Fatalf("PCC %v required %v judged %v, want the harness's 0.95 of 0.90", out.PCCValue, out.PCCRequired, out.PCCJudged)
	}
	if out.Measurements.BatchSize != 8 || out.Measurements.TotalSamples != 8*16 || out.Measurements.IterationMS.Count != 16 {
		t.Fatalf("measurements %+v, want batch 8 (the test's own) x 16 iterations", out.Measurements)
	}
	if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "batch size 8, not the job's 16") {
		t.Fatalf("notes %q, want one saying the batch differs", out.Notes)
	}
	if out.Phases == nil || out.Phases.WarmupS <= 0 || out.Phases.TimingS <= 0 {
		t.Fatalf("phases %+v", out.Phases)
	}
	d := harnesstest.ReadDump(t, dump)
	if want := filepath.Join(c.Workdir, "tests", "infra", "__init__.py"); d.Infra != want {
		t.Fatalf("infra resolved to %q, want %q", d.Infra, want)
	}
	log, _ := os.ReadFile(rec.artifacts[harness.ArtifactLog])
	if want := "pytest -svv --confcutdir=" + filepath.Join(c.Workdir, "tests", "benchmark") + " " + filepath.Join(c.Workdir, harnesstest.XLAResNet50); !strings.Contains(string(log), want) {
		t.Fatalf("tt-xla not run as its CI runs it (%s, no marker):\n%.600s", want, log)
	}
	if err := r.Check(protocol.Benchmark{Test: harnesstest.XLAResNet50, DataFormat: protocol.FormatFloat32}); !device.IsInvalid(err) {
		t.Fatalf("tt-xla accepted float32: %v", err)
	}
}

// A host with torch but without torch_xla cannot import tt-xla's test
// module: pytest exits 4 with "ImportError while importing test module"
// and "ERROR: not found". That is the host's fault; an id the module does
// not have is still the job's.
func TestTTXLAImportErrorIsTheHosts(t *testing.T) {
	t.Parallel()
	broken, _, _ := runnerFor(t, "tt-xla", harnesstest.NewCheckoutMissing(t, "tt-xla", "", "torch_xla"), nil)
	_, err := broken.Run(t.Context(), xlaJob(harnesstest.XLAResNet50, 8), n150, &recorder{})
	if !isHost(err) || !strings.Contains(err.Error(), "ImportError while importing test module") {
		t.Fatalf("err %v, want a host fault naming the import error", err)
	}
	good, _, _ := newRunner(t, "tt-xla", false, map[string]string{"FAKE_XLA_LOOP": "4"})
	if _, err := good.Run(t.Context(), xlaJob(harnesstest.XLAMissing, 8), n150, &recorder{}); !device.IsInvalid(err) {
		t.Fatalf("missing id: %v, want invalid", err)
	}
	// A failed check keeps the harness's figures.
	low, _, _ := newRunner(t, "tt-xla", false, map[string]string{"FAKE_XLA_LOOP": "4", "FAKE_PCC": "0.5"})
	_, err = low.Run(t.Context(), xlaJob(harnesstest.XLAResNet50, 8), n150, &recorder{})
	var be *device.BenchmarkError
	if !errors.As(err, &be) || be.PCC != 0.5 || be.PCCRequired != 0.9 {
		t.Fatalf("low PCC: %v, want a benchmark failure at 0.5 of 0.9", err)
	}
}

// tt-xla aggregates every perf-metric file in its working directory into
// the report: a job must never see another's.
func TestTTXLAJobsDoNotShareAWorkingDirectory(t *testing.T) {
	t.Parallel()
	r, _, _ := newRunner(t, "tt-xla", false, map[string]string{"FAKE_XLA_LOOP": "4"})
	var graphs []any
	for range 2 {
		rec := &recorder{}
		out, err := r.Run(t.Context(), xlaJob(harnesstest.XLAResNet50, 8), n150, rec)
		if err != nil {
			t.Fatal(err)
		}
		graphs = append(graphs, out.Report.Config["ttnn_num_graphs"])
	}
	if fmt.Sprint(graphs[0]) != "1" || fmt.Sprint(graphs[1]) != "1" {
		t.Fatalf("ttnn_num_graphs of two jobs in turn = %v, want 1 each (a job aggregated another's metric files)", graphs)
	}
}

func TestCancelKillsTheHungHarness(t *testing.T) {
	t.Parallel()
	r, _, _ := newRunner(t, "forge", false, map[string]string{"FAKE_HANG_DEVICES": n150BDF})
	done := make(chan error, 1)
	cctx, stop := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer stop()
	go func() { _, err := r.Run(cctx, job(harnesstest.ForgeResNet50, 1, 2, 1), n150, &recorder{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || cctx.Err() == nil {
			t.Fatalf("err %v, want the ctx's", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("harness not stopped")
	}
}

// The harness is the code under test: a report whose figures disagree
// with what it printed fails the job with a reason naming the
// disagreement, and a report too large to be one (a 200 GB sparse file)
// fails it without being read.
func TestHostileReportsFailTheirJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"forged samples", `loops(2, 8, 5)
print("PCC verification passed with PCC=0.990000")
report(total_samples=1, total_time=1e-9)`, "total_samples 1 is not batch_size 8 × the 8 timed iterations"},
		{"forged time", `loops(2, 8, 300)
print("PCC verification passed with PCC=0.990000")
report(total_time=1e-9)`, "total_time"},
		{"forged pcc", `loops(2, 8, 5)
print("PCC verification passed with PCC=0.410000")
report(pcc=1.0, total_time=0.04)`, "printed PCC 0.41 but its report says 1"},
		{"sparse 200 GB report", `loops(2, 8, 5)
print("PCC verification passed with PCC=0.990000")
with open(output_file, "w") as f:
    f.truncate(200 << 30)`, "over the"},
		{"report is a symlink", `loops(2, 8, 5)
print("PCC verification passed with PCC=0.990000")
os.symlink("/etc/shadow", output_file)`, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _, _ := runnerFor(t, "forge", harnesstest.NewHostile(t, tc.body), nil)
			_, err := r.Run(t.Context(), job(harnesstest.ForgeResNet50, 8, 8, 2), n150, &recorder{})
			if !device.IsBenchmark(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a benchmark failure naming %q", err, tc.want)
			}
		})
	}
}
