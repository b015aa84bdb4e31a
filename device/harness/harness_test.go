package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	tmp := filepath.Join(t.TempDir(), "not", "yet", "there") // a fresh host: nothing pre-created
	k, ok := device.Lookup(kind)
	if !ok {
		t.Fatalf("kind %s not registered", kind)
	}
	r, err := k.New(device.Settings{Workdir: c.Workdir, Python: c.Python, Env: env, TempDir: tmp}, zerolog.Nop())
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

var n150 = device.Device{ID: "tt0", Pool: "n150", Arch: "wormhole", Chips: 1, Visible: "0"}

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
	if out.PCCValue != 0.998765 || out.Arch != "wormhole" || out.Upstream != harness.ArtifactReport {
		t.Fatalf("outcome %+v", out)
	}
	// The upstream conftest's marker file lands in the slot's own directory.
	if _, err := os.Stat(filepath.Join(tmp, "slot-tt0", ".pytest_current_test_executing")); err != nil {
		t.Fatalf("marker not in the slot directory: %v", err)
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
	watchdog, _, _ := newRunner(t, "forge", false, map[string]string{"FAKE_HANG_DEVICES": "0", "FAKE_WATCHDOG_S": "0.2"})
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
			_, err := tc.r.Run(t.Context(), tc.job, n150, &recorder{})
			if err == nil || !tc.check(err) {
				t.Fatalf("err %v, want a %s", err, tc.what)
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
		"BENCHFLEET_STORE": "s3://x", "TT_METAL_HOME": "/opt/tt-metal"} {
		t.Setenv(k, v)
	}
	dump := filepath.Join(t.TempDir(), "env.json")
	r, c, _ := newRunner(t, "forge", false, map[string]string{"FAKE_ENV_DUMP": dump, "HF_HOME": "/mnt/hf"})
	if _, err := r.Run(t.Context(), job(harnesstest.ForgeResNet50, 1, 2, 1), n150, &recorder{}); err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	data, _ := os.ReadFile(dump)
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"NATS_PASSWORD", "NATS_TOKEN", "AWS_SECRET_ACCESS_KEY", "BENCHFLEET_STORE"} {
		if _, ok := env[k]; ok {
			t.Errorf("harness sees %s", k)
		}
	}
	for k, want := range map[string]string{"TT_VISIBLE_DEVICES": "0", "HF_HOME": "/mnt/hf", "TT_METAL_HOME": "/opt/tt-metal", "PYTHONPATH": c.Workdir} {
		if env[k] != want {
			t.Errorf("harness env %s=%q, want %q", k, env[k], want)
		}
	}
}

func TestTTXLAPassesWithPCCFromItsLine(t *testing.T) {
	t.Parallel()
	r, _, _ := newRunner(t, "tt-xla", false, map[string]string{"FAKE_XLA_LOOP": "16"})
	j := job(harnesstest.XLAResNet50, 8, 16, 0)
	j.Runner = protocol.RunnerTTXLA
	rec := &recorder{}
	out, err := r.Run(t.Context(), j, n150, rec)
	if err != nil {
		t.Fatal(err)
	}
	if out.PCCValue != 0.998765 || out.Measurements.TotalSamples != 8*16 || out.Measurements.IterationMS.Count != 16 {
		t.Fatalf("outcome %+v %+v", out, out.Measurements)
	}
	if out.Phases == nil || out.Phases.WarmupS <= 0 || out.Phases.TimingS <= 0 {
		t.Fatalf("phases %+v", out.Phases)
	}
	if err := r.Check(protocol.Benchmark{Test: harnesstest.XLAResNet50, DataFormat: protocol.FormatFloat32}); !device.IsInvalid(err) {
		t.Fatalf("tt-xla accepted float32: %v", err)
	}
}

func TestCancelKillsTheHungHarness(t *testing.T) {
	t.Parallel()
	r, _, _ := newRunner(t, "forge", false, map[string]string{"FAKE_HANG_DEVICES": "0"})
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
