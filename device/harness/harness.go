// Package harness runs the upstream Tenstorrent benchmark harnesses (pytest
// tests marked "perf", DESIGN §1, shared/UPSTREAM.md §1–2) as supervised
// subprocesses. One Runner type does the supervision every harness shares:
//
//	<python> -m pytest -svv -m <marker> <checkout>/<test> <profile options> \
//	    --output-file <job dir>/report.json --rootdir <checkout> \
//	    -o cache_dir=<slot dir>/.pytest_cache
//
// run with the slot's own working directory (upstream conftests write
// marker files into the working directory, so slots sharing a checkout
// must not share it) and PYTHONPATH set to the checkout (what `python -m`
// would have given with the checkout as cwd), TT_VISIBLE_DEVICES set to
// the slot's chips, an allowlisted environment (never the worker's
// credentials, see Env), in its own process group. The combined output is
// streamed to the recorder, scanned for the warmup and timed loops, and
// kept as the "log.txt" artifact; the output file becomes "report.json".
//
// What differs between harnesses (their options, their report, their
// required PCC) is a Profile; each lives in one file of this package
// (forge.go for tt-forge-onnx, ttxla.go for tt-xla) and registers itself
// with device.Register. A third harness is a third file here.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// Profile is what one upstream harness adds to the shared supervision.
type Profile interface {
	// Name is the runner name jobs ask for (e.g. "forge").
	Name() string
	// Marker is the pytest -m expression that selects perf tests.
	Marker() string
	// Check validates a job's benchmark for this harness without a host.
	// It returns a *device.InvalidError or nil.
	Check(b protocol.Benchmark) error
	// Options returns the harness options after the test id, without
	// --output-file (the runner adds it).
	Options(b protocol.Benchmark) []string
	// Outcome turns a passed run's report into the outcome. The scan holds
	// the loops the harness printed.
	Outcome(report []byte, b protocol.Benchmark, scan *Scan) (*device.Outcome, error)
}

// Config configures a Runner.
type Config struct {
	// Workdir is the upstream checkout (e.g. /opt/tt-forge-onnx). Required;
	// it must be an existing directory. Test ids resolve in it.
	Workdir string
	// Python is the interpreter of the harness's environment, a path or a
	// name looked up in PATH. Default "python3".
	Python string
	// Env is added to the harness's allowlisted environment (see Env), e.g.
	// HF_HOME. It must not set TT_VISIBLE_DEVICES, which the runner sets
	// from the device.
	Env map[string]string
	// KillGrace is how long a cancelled harness gets between SIGTERM and
	// SIGKILL to its process group. Default 10s.
	KillGrace time.Duration
	// TempDir holds per-job directories (log.txt, report.json) and one
	// working directory per slot; created (0700) if missing. Default
	// os.TempDir()/benchfleet-harness. Job directories stay after Run
	// returns so the worker can upload the artifacts; ones older than
	// JobDirMaxAge are removed when a later job starts.
	TempDir string
}

// Runner runs one harness profile. It is safe for concurrent use: each Run
// has its own process, job directory and slot directory.
type Runner struct {
	p      Profile
	cfg    Config
	python string
	log    zerolog.Logger

	pruneMu   sync.Mutex
	lastPrune time.Time
}

// New validates cfg, fills its defaults, creates TempDir and returns a
// runner of profile p. Errors name the Config field.
func New(p Profile, cfg Config, log zerolog.Logger) (*Runner, error) {
	name := p.Name()
	if cfg.Workdir == "" {
		return nil, fmt.Errorf("%s: workdir is required (the upstream checkout)", name)
	}
	abs, err := filepath.Abs(cfg.Workdir)
	if err != nil {
		return nil, fmt.Errorf("%s: workdir: %w", name, err)
	}
	cfg.Workdir = abs
	st, err := os.Stat(cfg.Workdir)
	if err != nil {
		return nil, fmt.Errorf("%s: workdir: %w", name, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: workdir %q is not a directory", name, cfg.Workdir)
	}
	if cfg.Python == "" {
		cfg.Python = DefaultPython
	}
	python, err := exec.LookPath(cfg.Python)
	if err != nil {
		return nil, fmt.Errorf("%s: python: %w", name, err)
	}
	if !filepath.IsAbs(python) {
		if python, err = filepath.Abs(python); err != nil {
			return nil, fmt.Errorf("%s: python: %w", name, err)
		}
	}
	for k := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("%s: env: invalid variable name %q", name, k)
		}
		if k == "TT_VISIBLE_DEVICES" {
			return nil, fmt.Errorf("%s: env must not set TT_VISIBLE_DEVICES (the runner sets it per device)", name)
		}
	}
	if cfg.KillGrace < 0 {
		return nil, fmt.Errorf("%s: kill grace %s is negative", name, cfg.KillGrace)
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.TempDir == "" {
		cfg.TempDir = filepath.Join(os.TempDir(), "benchfleet-harness")
	}
	if err := os.MkdirAll(cfg.TempDir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: temp dir: %w", name, err)
	}
	return &Runner{p: p, cfg: cfg, python: python, log: log.With().Str("component", "harness").Str("harness", name).Logger()}, nil
}

// Name implements device.Runner.
func (r *Runner) Name() string { return r.p.Name() }

// Check implements device.Runner.
func (r *Runner) Check(b protocol.Benchmark) error { return r.p.Check(b) }

// Argv returns the harness's full argv (interpreter first) for b, writing
// its report to outputFile and keeping pytest's cache in slotDir.
func (r *Runner) Argv(b protocol.Benchmark, outputFile, slotDir string) []string {
	argv := []string{r.python, "-m", "pytest", "-svv", "-m", r.p.Marker(), filepath.Join(r.cfg.Workdir, b.Test)}
	argv = append(argv, r.p.Options(b)...)
	return append(argv, "--output-file", outputFile,
		"--rootdir", r.cfg.Workdir, "-o", "cache_dir="+filepath.Join(slotDir, ".pytest_cache"))
}

// Run implements device.Runner. It returns ctx's error when ctx ends first
// (after killing the harness's process group); otherwise the outcome or a
// typed error from classify: *device.InvalidError (usage error, test not
// found or deselected), *device.HostError (the harness cannot start on this
// host), *device.BenchmarkError (the test failed), *device.InfraError
// (crash, interrupt; Hang set for a signal such as the upstream watchdog's
// SIGABRT).
func (r *Runner) Run(ctx context.Context, job *protocol.Job, dev device.Device, rec device.Recorder) (*device.Outcome, error) {
	if err := r.Check(job.Benchmark); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: not started: %w", r.Name(), err)
	}
	if dev.Visible == "" {
		return nil, device.Infra("%s: device %s has no chips to make visible (TT_VISIBLE_DEVICES)", r.Name(), dev.ID)
	}
	log := r.log.With().Str("job", job.ID).Str("run", job.Run).Str("device", dev.ID).
		Int("attempt", device.AttemptFrom(ctx)).Logger()
	r.prune(log)

	// Both directories may have been removed under a long-running worker
	// (tmp cleaners): create them for every job.
	if err := os.MkdirAll(r.cfg.TempDir, 0o700); err != nil {
		return nil, device.Infra("%s: temp dir: %v", r.Name(), err)
	}
	slotDir := filepath.Join(r.cfg.TempDir, "slot-"+dev.ID)
	if err := os.MkdirAll(slotDir, 0o700); err != nil {
		return nil, device.Infra("%s: slot directory: %v", r.Name(), err)
	}
	dir, err := os.MkdirTemp(r.cfg.TempDir, "job-"+job.ID+"-")
	if err != nil {
		return nil, device.Infra("%s: job directory: %v", r.Name(), err)
	}
	logPath := filepath.Join(dir, ArtifactLog)
	reportPath := filepath.Join(dir, ArtifactReport)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, device.Infra("%s: log file: %v", r.Name(), err)
	}
	defer logFile.Close()
	rec.Artifact(ArtifactLog, logPath)

	argv := r.Argv(job.Benchmark, reportPath, slotDir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = slotDir
	cmd.Env = Env(os.Environ(), r.cfg.Env, r.cfg.Workdir, dev.Visible)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, device.Infra("%s: pipe: %v", r.Name(), err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	fmt.Fprintf(logFile, "$ cd %s && TT_VISIBLE_DEVICES=%s %s\n", slotDir, dev.Visible, quoteArgv(argv))

	log.Info().Str("test", job.Benchmark.Test).Str("visible", dev.Visible).Msg("starting harness")
	start := time.Now()
	rec.Phase(device.PhaseCompile)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, device.Infra("%s: start %s: %v", r.Name(), r.python, err)
	}
	pw.Close() // the child holds its own copy
	pgid := cmd.Process.Pid

	sc := newScanner(rec, start, time.Now, job.Benchmark.LoopCount)
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
	sc.finish(end)
	fmt.Fprintf(logFile, "[benchfleet: harness exited after %s: %v]\n", end.Sub(start).Round(time.Millisecond), exitText(waitErr))

	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: harness stopped after %s: %w", r.Name(), end.Sub(start).Round(time.Millisecond), ctx.Err())
	}
	code, sig := exitStatus(waitErr)
	if waitErr != nil && code < 0 && sig == 0 {
		return nil, device.Infra("%s: waiting for the harness: %v", r.Name(), waitErr)
	}
	data, readErr := os.ReadFile(reportPath)
	if readErr == nil {
		rec.Artifact(ArtifactReport, reportPath)
	}
	if err := classify(r.Name(), job.Benchmark.Test, code, sig, sc, readErr); err != nil {
		return nil, err
	}
	out, err := r.p.Outcome(data, job.Benchmark, sc)
	if err != nil {
		return nil, err
	}
	out.Upstream = ArtifactReport
	if out.Arch == "" {
		out.Arch = dev.Arch
	}
	if want := int64(job.Benchmark.BatchSize) * int64(job.Benchmark.LoopCount); out.Measurements.TotalSamples != want {
		log.Warn().Int64("report", out.Measurements.TotalSamples).Int64("expected", want).
			Msg("report's total_samples differs from batch_size × loop_count")
	}
	if it := sc.Timed(); len(it) > 0 {
		out.Measurements.IterationMS = device.IterationStats(it)
	}
	if p, ok := sc.Phases(out.Measurements.TotalTimeS); ok {
		out.Phases = &p
	}
	log.Info().Float64("samples_per_sec", out.Measurements.SamplesPerSec).Float64("pcc", out.PCCValue).Msg("harness passed")
	return out, nil
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
	dirs, _ := filepath.Glob(filepath.Join(r.cfg.TempDir, "job-*"))
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() && time.Since(st.ModTime()) > JobDirMaxAge {
			if err := os.RemoveAll(d); err != nil {
				log.Warn().Err(err).Str("dir", d).Msg("removing an old job directory")
			}
		}
	}
}

// exitStatus returns the exit code (-1 if none) and the signal that ended
// the process (0 if none).
func exitStatus(err error) (code int, sig syscall.Signal) {
	if err == nil {
		return 0, 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1, 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return ee.ExitCode(), 0
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	if _, sig := exitStatus(err); sig != 0 {
		return "killed by signal " + sig.String()
	}
	return err.Error()
}

// quoteArgv renders argv for the log, quoting elements with spaces (the
// harness never sees this string; it gets the argv itself).
func quoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t'\"\\$`[]") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
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
