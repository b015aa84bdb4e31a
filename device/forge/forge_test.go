package forge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/forge"
	"github.com/benchfleet/benchfleet/protocol"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakePytest(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

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

func newRunner(t *testing.T, mode string, extra map[string]string) *forge.Runner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{fakeEnv: mode}
	for k, v := range extra {
		env[k] = v
	}
	r, err := forge.New(forge.Config{
		Workdir:   t.TempDir(),
		Python:    self,
		Env:       env,
		KillGrace: 300 * time.Millisecond,
		TempDir:   t.TempDir(),
	}, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testJob() *protocol.Job {
	return &protocol.Job{
		Schema: protocol.SchemaJob, ID: "job-1", Run: "run-1", Pool: "n300", Runner: protocol.RunnerForge,
		Benchmark: protocol.Benchmark{
			Test: "forge/test/benchmark/test_vision.py::test_resnet50", Model: "resnet50",
			BatchSize: 8, LoopCount: 16, WarmupCount: 4, DataFormat: protocol.FormatBfloat16,
		},
		Limits: protocol.Limits{PCCMin: 0.99},
	}
}

var testDev = device.Device{ID: "tt0", Pool: "n300", Runner: protocol.RunnerForge, Arch: "wormhole", Chips: 2, Path: "/dev/tenstorrent/0", Visible: "0"}

func TestArgs(t *testing.T) {
	t.Parallel()
	got := forge.Args(testJob().Benchmark, "/tmp/j/report.json")
	want := []string{"-m", "pytest", "-svv", "-m", "perf", "forge/test/benchmark/test_vision.py::test_resnet50",
		"--batch-size", "8", "--loop-count", "16", "--warmup-count", "4", "--data-format", "bfloat16",
		"--output-file", "/tmp/j/report.json"}
	if !slices.Equal(got, want) {
		t.Fatalf("Args:\n got %q\nwant %q", got, want)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop()
	for name, tc := range map[string]struct {
		cfg  forge.Config
		want string
	}{
		"no workdir":       {forge.Config{}, "Workdir"},
		"missing workdir":  {forge.Config{Workdir: filepath.Join(dir, "nope")}, "Workdir"},
		"workdir is file":  {forge.Config{Workdir: file}, "not a directory"},
		"python not found": {forge.Config{Workdir: dir, Python: "no-such-python-xyz"}, "Python"},
		"visible in env":   {forge.Config{Workdir: dir, Python: "/bin/sh", Env: map[string]string{"TT_VISIBLE_DEVICES": "1"}}, "TT_VISIBLE_DEVICES"},
		"bad env name":     {forge.Config{Workdir: dir, Python: "/bin/sh", Env: map[string]string{"A=B": "1"}}, "Env"},
		"negative grace":   {forge.Config{Workdir: dir, Python: "/bin/sh", KillGrace: -time.Second}, "KillGrace"},
	} {
		_, err := forge.New(tc.cfg, log)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error %v, want one naming %q", name, err, tc.want)
		}
	}
	if _, err := forge.New(forge.Config{Workdir: dir, Python: "/bin/sh"}, log); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakePass, nil)
	b := testJob().Benchmark
	if err := r.Check(b); err != nil {
		t.Fatalf("Check: %v", err)
	}
	b.Training = true
	if err := r.Check(b); !device.IsInvalid(err) || !strings.Contains(err.Error(), "training is not supported") {
		t.Errorf("training: %v, want InvalidError", err)
	}
	b = testJob().Benchmark
	b.Test = ""
	if err := r.Check(b); !device.IsInvalid(err) {
		t.Errorf("no test: %v, want InvalidError", err)
	}
	if r.Name() != protocol.RunnerForge {
		t.Errorf("Name = %q", r.Name())
	}
}

func TestRunPasses(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakePass, nil)
	rec := &recorder{}
	job := testJob()
	dev := testDev
	dev.Visible = "0,1"
	out, err := r.Run(t.Context(), job, dev, rec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	reportPath := rec.artifacts[forge.ArtifactReport]
	data, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatalf("report artifact: %v", err)
	}
	rep, err := forge.ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	ts, tt := rep.TotalSamples(), rep.TotalTime()
	if out.Measurements.TotalSamples != ts || ts != 8*16 || out.Measurements.TotalTimeS != tt {
		t.Errorf("measurements %+v, report samples %d time %v", out.Measurements, ts, tt)
	}
	if out.Measurements.SamplesPerSec != float64(ts)/tt {
		t.Errorf("samples_per_sec = %v, want exactly %v", out.Measurements.SamplesPerSec, float64(ts)/tt)
	}
	if out.Upstream != forge.ArtifactReport || out.PCCValue != 0.99712 || out.Arch != "wormhole" {
		t.Errorf("outcome %+v", out)
	}
	// Iteration lines: 16 iterations of 10, 11, 12, 13 ms.
	it := out.Measurements.IterationMS
	if it.Min != 10 || it.Max != 13 || it.Mean != 11.5 {
		t.Errorf("iteration stats %+v", it)
	}
	if out.Phases == nil || out.Phases.CompileS < 0.02 || out.Phases.TimingS != tt {
		t.Errorf("phases %+v", out.Phases)
	}
	logData, err := os.ReadFile(rec.artifacts[forge.ArtifactLog])
	if err != nil {
		t.Fatalf("log artifact: %v", err)
	}
	for _, want := range []string{"TT_VISIBLE_DEVICES=0,1", "Iteration 15 took", "Total time:", "PASSED", "--output-file"} {
		if !strings.Contains(string(logData), want) {
			t.Errorf("log.txt lacks %q:\n%s", want, logData)
		}
	}
	wantPhases := []string{device.PhaseCompile, device.PhaseWarmup, device.PhaseTiming, device.PhasePCC}
	if !slices.Equal(rec.phases, wantPhases) {
		t.Errorf("phases %v, want %v", rec.phases, wantPhases)
	}
	if !slices.ContainsFunc(rec.lines, func(l string) bool { return strings.HasPrefix(l, "Iteration 3 took") }) {
		t.Errorf("log lines not streamed: %q", rec.lines)
	}
}

func TestRunWarmupIterationsNotCounted(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakePassWarmIts, nil)
	out, err := r.Run(t.Context(), testJob(), testDev, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if it := out.Measurements.IterationMS; it.Max != 13 {
		t.Errorf("warmup iterations leaked into the stats: %+v", it)
	}
}

func TestRunPCCFailure(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakePCC, nil)
	rec := &recorder{}
	_, err := r.Run(t.Context(), testJob(), testDev, rec)
	var be *device.BenchmarkError
	if !errors.As(err, &be) {
		t.Fatalf("Run error %v (%T), want *device.BenchmarkError", err, err)
	}
	if !strings.Contains(be.Reason, "AssertionError: PCC is 0.4213") || !strings.Contains(be.Reason, "log tail") {
		t.Errorf("reason lacks the log tail: %q", be.Reason)
	}
	if n := strings.Count(be.Reason, "\n"); n > 21 || len(be.Reason) > 5000 {
		t.Errorf("reason too long: %d lines, %d bytes", n, len(be.Reason))
	}
	if _, ok := rec.artifacts[forge.ArtifactReport]; ok {
		t.Error("report registered although none was written")
	}
	if _, ok := rec.artifacts[forge.ArtifactLog]; !ok {
		t.Error("log not registered")
	}
}

func TestRunUsageError(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakePass, nil)
	job := testJob()
	job.Benchmark.BatchSize = 0 // the runner passes it through; the harness rejects it
	_, err := r.Run(t.Context(), job, testDev, &recorder{})
	var ie *device.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "--batch-size") {
		t.Fatalf("Run error %v, want *device.InvalidError naming --batch-size", err)
	}
}

func TestRunOtherExits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  string
		check func(error) bool
		want  string
	}{
		{fakeInterrupted, isInfra, "interrupted"},
		{fakeCrash, isInfra, "signal"},
		{fakeSkip, device.IsBenchmark, "no report"},
		{fakeBadReport, device.IsBenchmark, "measurements"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, tc.mode, nil)
			_, err := r.Run(t.Context(), testJob(), testDev, &recorder{})
			if err == nil || !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func isInfra(err error) bool {
	var ie *device.InfraError
	return errors.As(err, &ie)
}

func TestRunNoVisibleDevices(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakePass, nil)
	dev := testDev
	dev.Visible = ""
	if _, err := r.Run(t.Context(), testJob(), dev, &recorder{}); !isInfra(err) {
		t.Fatalf("Run error %v, want InfraError", err)
	}
}

func TestRunSpamIsBounded(t *testing.T) {
	t.Parallel()
	r := newRunner(t, fakeSpam, nil)
	rec := &recorder{}
	if _, err := r.Run(t.Context(), testJob(), testDev, rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.lines) >= 3000 {
		t.Errorf("%d lines streamed; want the rate limit to drop some", len(rec.lines))
	}
	for _, l := range rec.lines {
		if len(l) > 4096 {
			t.Fatalf("line of %d bytes streamed", len(l))
		}
	}
	if !slices.ContainsFunc(rec.lines, func(l string) bool { return strings.Contains(l, "not streamed") }) {
		t.Error("no note about dropped lines")
	}
	data, err := os.ReadFile(rec.artifacts[forge.ArtifactLog])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "spam line 2999") || len(data) < 100_000 {
		t.Error("log.txt does not hold the full output")
	}
}

// TestRunHangKillsGroup: a harness that hangs after compile and ignores
// SIGTERM, with a child that does the same, is SIGKILLed as a group once
// the deadline passes and the grace period ends.
func TestRunHangKillsGroup(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{fakeHang, fakeHangPolite} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			r := newRunner(t, mode, map[string]string{"FAKE_PIDFILE": pidFile})
			ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
			defer cancel()
			rec := &recorder{}
			start := time.Now()
			_, err := r.Run(ctx, testJob(), testDev, rec)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Run error %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Run returned %s after start; want promptly after the deadline", d)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("child pid: %v", err)
			}
			pid, _ := strconv.Atoi(string(data))
			waitGone(t, pid)
			if _, ok := rec.artifacts[forge.ArtifactLog]; !ok {
				t.Error("log not registered")
			}
		})
	}
}

// waitGone polls until pid no longer runs (gone or a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return
			}
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d still running 10s after Run returned", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
