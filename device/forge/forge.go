// Package forge is the device.Runner that runs the upstream Tenstorrent
// benchmark harness (a pytest test marked "perf", DESIGN §1) as a
// subprocess:
//
//	<python> -m pytest -svv -m perf <test> --batch-size B --loop-count L \
//	    --warmup-count W --data-format F --output-file <job dir>/report.json
//
// run in Config.Workdir with TT_VISIBLE_DEVICES set to the slot's chips, in
// its own process group. The combined output is streamed to the recorder
// and kept as the "log.txt" artifact; the output file, written by the
// harness only when the test passed, becomes the "report.json" artifact and
// the result's measurements.
package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// Artifact names the runner registers.
const (
	ArtifactLog    = "log.txt"
	ArtifactReport = "report.json"
)

// Defaults of Config.
const (
	DefaultPython    = "python3"
	DefaultKillGrace = 10 * time.Second
	// JobDirMaxAge is how long a job directory (log and report) is kept
	// after its run; older ones are removed when a later job starts.
	JobDirMaxAge = 24 * time.Hour
)

// pytest exit codes (pytest.ExitCode).
const (
	exitTestsFailed  = 1
	exitInterrupted  = 2
	exitInternal     = 3
	exitUsageError   = 4
	exitNoTestsFound = 5
)

// Config configures the forge runner.
type Config struct {
	// Workdir is the upstream checkout the harness runs in (e.g.
	// /opt/tt-forge-onnx). Required; it must be an existing directory.
	Workdir string
	// Python is the interpreter of the harness's environment, a path or a
	// name looked up in PATH. Default "python3".
	Python string
	// Env is added to the worker's environment for the harness (e.g.
	// HF_HOME). It must not set TT_VISIBLE_DEVICES, which the runner sets
	// from the device. PYTHONUNBUFFERED=1 is added unless Env sets it.
	Env map[string]string
	// KillGrace is how long a cancelled harness gets between SIGTERM and
	// SIGKILL to its process group. Default 10s.
	KillGrace time.Duration
	// TempDir is where per-job directories (log.txt, report.json) are
	// created. Default os.TempDir(). Job directories stay after Run returns
	// so the worker can upload the artifacts; ones older than JobDirMaxAge
	// are removed when a later job starts.
	TempDir string
}

// Runner is the forge runner. It is safe for concurrent use: each Run has
// its own process and job directory.
type Runner struct {
	cfg    Config
	python string
	log    zerolog.Logger

	pruneMu   sync.Mutex
	lastPrune time.Time
}

// New validates cfg, fills its defaults and returns a runner. Errors name
// the Config field.
func New(cfg Config, log zerolog.Logger) (*Runner, error) {
	if cfg.Workdir == "" {
		return nil, errors.New("forge: Config.Workdir is required (the upstream checkout)")
	}
	st, err := os.Stat(cfg.Workdir)
	if err != nil {
		return nil, fmt.Errorf("forge: Config.Workdir: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("forge: Config.Workdir %q is not a directory", cfg.Workdir)
	}
	if cfg.Python == "" {
		cfg.Python = DefaultPython
	}
	python, err := exec.LookPath(cfg.Python)
	if err != nil {
		return nil, fmt.Errorf("forge: Config.Python: %w", err)
	}
	if !filepath.IsAbs(python) {
		if python, err = filepath.Abs(python); err != nil {
			return nil, fmt.Errorf("forge: Config.Python: %w", err)
		}
	}
	for k := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("forge: Config.Env: invalid variable name %q", k)
		}
		if k == "TT_VISIBLE_DEVICES" {
			return nil, errors.New("forge: Config.Env must not set TT_VISIBLE_DEVICES (the runner sets it per device)")
		}
	}
	if cfg.KillGrace < 0 {
		return nil, fmt.Errorf("forge: Config.KillGrace %s is negative", cfg.KillGrace)
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	return &Runner{cfg: cfg, python: python, log: log.With().Str("component", "forge").Logger()}, nil
}

// Name implements device.Runner: protocol.RunnerForge.
func (*Runner) Name() string { return protocol.RunnerForge }

// Check implements device.Runner. The harness needs a pytest node id and
// does not support training.
func (*Runner) Check(b protocol.Benchmark) error {
	if b.Training {
		return device.Invalid("training is not supported by the forge harness")
	}
	if b.Test == "" {
		return device.Invalid("benchmark.test is required for the forge runner (a pytest node id)")
	}
	return nil
}

// Args returns the harness's argv after the interpreter, for b writing its
// report to outputFile.
func Args(b protocol.Benchmark, outputFile string) []string {
	format := b.DataFormat
	if format == "" {
		format = protocol.FormatBfloat16
	}
	warmup := b.WarmupCount
	if warmup == 0 {
		warmup = min(32, b.LoopCount)
	}
	return []string{
		"-m", "pytest", "-svv", "-m", "perf", b.Test,
		"--batch-size", strconv.Itoa(b.BatchSize),
		"--loop-count", strconv.Itoa(b.LoopCount),
		"--warmup-count", strconv.Itoa(warmup),
		"--data-format", format,
		"--output-file", outputFile,
	}
}

// Run implements device.Runner. It returns ctx's error when ctx ends first
// (after killing the harness's process group), *device.InvalidError for a
// pytest usage error or an unknown test, *device.BenchmarkError when the
// test failed (no report; the reason ends with the log's tail), and
// *device.InfraError when the harness was interrupted, crashed or could not
// start.
func (r *Runner) Run(ctx context.Context, job *protocol.Job, dev device.Device, rec device.Recorder) (*device.Outcome, error) {
	if err := r.Check(job.Benchmark); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("forge: not started: %w", err)
	}
	if dev.Visible == "" {
		return nil, device.Infra("forge: device %s has no chips to make visible (TT_VISIBLE_DEVICES)", dev.ID)
	}
	log := r.log.With().Str("job", job.ID).Str("run", job.Run).Str("device", dev.ID).
		Int("attempt", device.AttemptFrom(ctx)).Logger()
	r.prune(log)

	dir, err := os.MkdirTemp(r.cfg.TempDir, "benchfleet-forge-"+job.ID+"-")
	if err != nil {
		return nil, device.Infra("forge: job directory: %v", err)
	}
	logPath := filepath.Join(dir, ArtifactLog)
	reportPath := filepath.Join(dir, ArtifactReport)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, device.Infra("forge: log file: %v", err)
	}
	defer logFile.Close()
	rec.Artifact(ArtifactLog, logPath)

	args := Args(job.Benchmark, reportPath)
	cmd := exec.Command(r.python, args...)
	cmd.Dir = r.cfg.Workdir
	cmd.Env = r.env(dev.Visible)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, device.Infra("forge: pipe: %v", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	fmt.Fprintf(logFile, "$ cd %s && TT_VISIBLE_DEVICES=%s %s %s\n", r.cfg.Workdir, dev.Visible, r.python, strings.Join(args, " "))

	log.Info().Str("test", job.Benchmark.Test).Str("visible", dev.Visible).Msg("starting harness")
	start := time.Now()
	rec.Phase(device.PhaseCompile)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, device.Infra("forge: start %s: %v", r.python, err)
	}
	pw.Close() // the child holds its own copy
	pgid := cmd.Process.Pid

	sc := newScanner(rec, start, time.Now)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc.run(io.TeeReader(pr, &cappedWriter{w: logFile, left: maxLogFileBytes}))
	}()

	// Stop the process group when ctx ends: SIGTERM, then SIGKILL after
	// KillGrace. The watcher ends with the process.
	exited := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-exited:
			return
		case <-ctx.Done():
		}
		log.Warn().Err(ctx.Err()).Dur("grace", r.cfg.KillGrace).Msg("stopping harness: SIGTERM to its process group")
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(r.cfg.KillGrace)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			log.Warn().Msg("harness still running after the grace period: SIGKILL to its process group")
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	waitErr := cmd.Wait()
	end := time.Now()
	close(exited)
	<-watched
	// Whatever the harness left behind in its group (a hung child holding
	// the device or the pipe) goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-scanned:
	case <-time.After(5 * time.Second):
		// A descendant that left the group still holds the pipe open.
		log.Warn().Msg("harness output still open 5s after exit; closing it")
	}
	pr.Close()
	<-scanned
	fmt.Fprintf(logFile, "[benchfleet: harness exited after %s: %v]\n", end.Sub(start).Round(time.Millisecond), exitText(waitErr))

	if ctx.Err() != nil {
		return nil, fmt.Errorf("forge: harness stopped after %s: %w", end.Sub(start).Round(time.Millisecond), ctx.Err())
	}
	code, signaled := exitStatus(waitErr)
	if waitErr != nil && code < 0 && !signaled {
		return nil, device.Infra("forge: waiting for the harness: %v", waitErr)
	}
	if signaled {
		return nil, device.Infra("forge: harness %s%s", exitText(waitErr), tailSuffix(sc.Tail()))
	}
	switch code {
	case exitUsageError:
		return nil, device.Invalid("pytest usage error (exit 4)%s", tailSuffix(sc.Tail()))
	case exitNoTestsFound:
		return nil, device.Invalid("pytest found no test %q (exit 5)%s", job.Benchmark.Test, tailSuffix(sc.Tail()))
	case exitInterrupted, exitInternal:
		return nil, device.Infra("forge: pytest %s (exit %d)%s", map[int]string{2: "was interrupted", 3: "hit an internal error"}[code], code, tailSuffix(sc.Tail()))
	}

	data, readErr := os.ReadFile(reportPath)
	if readErr == nil {
		rec.Artifact(ArtifactReport, reportPath)
	}
	if code != 0 {
		if code == exitTestsFailed {
			what := "no report"
			if readErr == nil {
				what = "although it wrote a report"
			}
			return nil, device.Failed("test failed (pytest exit 1, %s)%s", what, tailSuffix(sc.Tail()))
		}
		return nil, device.Infra("forge: harness exited with status %d%s", code, tailSuffix(sc.Tail()))
	}
	if readErr != nil {
		if errors.Is(readErr, os.ErrNotExist) {
			return nil, device.Failed("harness exited 0 but wrote no report (test skipped or deselected?)%s", tailSuffix(sc.Tail()))
		}
		return nil, device.Infra("forge: read report: %v", readErr)
	}
	rep, err := ParseReport(data)
	if err != nil {
		return nil, device.Failed("%v", err)
	}
	if rep.PCC == nil {
		return nil, device.Failed("upstream report has no pcc: cannot confirm the accuracy check")
	}
	return r.outcome(log, job, dev, rep, sc, end), nil
}

func (r *Runner) outcome(log zerolog.Logger, job *protocol.Job, dev device.Device, rep *Report, sc *scanner, end time.Time) *device.Outcome {
	b := job.Benchmark
	if want := int64(b.BatchSize) * int64(b.LoopCount); rep.TotalSamples() != want {
		log.Warn().Int64("report", rep.TotalSamples()).Int64("expected", want).
			Msg("report's total_samples differs from batch_size × loop_count")
	}
	m := protocol.Measurements{
		TotalSamples:  rep.TotalSamples(),
		TotalTimeS:    rep.TotalTime(),
		SamplesPerSec: rep.SamplesPerSec(),
	}
	iters := sc.Iterations(b.LoopCount)
	if len(iters) > 0 {
		m.IterationMS = device.IterationStats(iters)
	}
	out := &device.Outcome{
		Measurements: m,
		PCCValue:     *rep.PCC,
		Upstream:     ArtifactReport,
		Arch:         rep.DeviceInfo.Arch,
	}
	if out.Arch == "" {
		out.Arch = dev.Arch
	}
	if p, ok := sc.phases(end, rep.TotalTime()); ok {
		out.Phases = &protocol.Phases{CompileS: p.compile, WarmupS: p.warmup, TimingS: p.timing, PCCS: p.pcc}
	}
	log.Info().Float64("samples_per_sec", m.SamplesPerSec).Float64("pcc", out.PCCValue).Msg("harness passed")
	return out
}

// env is the harness's environment: the worker's, Config.Env, then
// TT_VISIBLE_DEVICES.
func (r *Runner) env(visible string) []string {
	set := map[string]string{}
	var order []string
	add := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, kv := range os.Environ() {
		add(kv)
	}
	if _, ok := r.cfg.Env["PYTHONUNBUFFERED"]; !ok {
		add("PYTHONUNBUFFERED=1")
	}
	for k, v := range r.cfg.Env {
		add(k + "=" + v)
	}
	add("TT_VISIBLE_DEVICES=" + visible)
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+set[k])
	}
	return env
}

// prune removes job directories older than JobDirMaxAge, at most once an hour.
func (r *Runner) prune(log zerolog.Logger) {
	r.pruneMu.Lock()
	if time.Since(r.lastPrune) < time.Hour {
		r.pruneMu.Unlock()
		return
	}
	r.lastPrune = time.Now()
	r.pruneMu.Unlock()
	dirs, _ := filepath.Glob(filepath.Join(r.cfg.TempDir, "benchfleet-forge-*"))
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() && time.Since(st.ModTime()) > JobDirMaxAge {
			if err := os.RemoveAll(d); err != nil {
				log.Warn().Err(err).Str("dir", d).Msg("removing an old job directory")
			}
		}
	}
}

// exitStatus returns the exit code (-1 if none) and whether a signal ended
// the process.
func exitStatus(err error) (code int, signaled bool) {
	if err == nil {
		return 0, false
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1, false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, true
	}
	return ee.ExitCode(), false
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
	}
	return err.Error()
}

func tailSuffix(tail string) string {
	if tail == "" {
		return "; the log is empty"
	}
	return "; log tail:\n" + tail
}

// cappedWriter writes to w until left bytes are used, then notes the cut
// once and drops the rest. Write errors are remembered and stop writing but
// never fail the reader side.
type cappedWriter struct {
	w    io.Writer
	left int64
	done bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.done {
		return len(p), nil
	}
	n := int64(len(p))
	if n > c.left {
		_, _ = c.w.Write(p[:c.left])
		_, _ = fmt.Fprintf(c.w, "\n[benchfleet: log.txt truncated at %d bytes]\n", maxLogFileBytes)
		c.done = true
		return len(p), nil
	}
	if _, err := c.w.Write(p); err != nil {
		c.done = true
	}
	c.left -= n
	return len(p), nil
}
