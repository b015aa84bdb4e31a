// Package harness runs the upstream Tenstorrent benchmark harnesses
// (their pytest perf tests) as supervised
// subprocesses, invoked the way each harness's own CI invokes them:
//
//	<python> -m pytest -svv <selection> <checkout>/<test> <profile options> \
//	    --output-file <job dir>/out/report.json --rootdir <checkout> \
//	    -o cache_dir=<job dir>/work/.pytest_cache
//
// where <selection> is the profile's (tt-forge-onnx: -m perf; tt-xla:
// --confcutdir=<checkout>/tests/benchmark, no marker). Every job runs in
// a fresh working directory of its own (<job dir>/work): the upstream
// conftests write marker files there and tt-xla aggregates the perf-metric
// files it finds there, so no job may see another's; the checkout files a
// harness reads from its working directory (forge's .test_durations, for
// its watchdog) are copied in. PYTHONPATH is what the harness's activate
// script sets, TT_VISIBLE_DEVICES the slot's board by PCI address, the
// rest of the environment allowlisted (never the worker's credentials, see
// Env); the harness gets its own process group. The combined output is
// streamed to the recorder, scanned for the warmup and timed loops and the
// accuracy check, and kept as the "log.txt" artifact; the output file
// becomes "report.json".
//
// What differs between harnesses (how CI selects and runs a test, its
// options, its report, how it judges PCC) is a Profile; each lives in one
// file of this package (forge.go for tt-forge-onnx, ttxla.go for tt-xla)
// and registers itself with device.Register. A third harness is a third
// file here.
package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
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
	// Check validates a job's benchmark for this harness without a host.
	// It returns a *device.InvalidError or nil.
	Check(b protocol.Benchmark) error
	// Command is how the harness's own CI runs b's test in checkout (an
	// absolute path).
	Command(checkout string, b protocol.Benchmark) Command
	// Outcome turns a passed run's report into the outcome. The scan holds
	// the loops and the accuracy check the harness printed.
	Outcome(report []byte, b protocol.Benchmark, scan *Scan) (*device.Outcome, error)
}

// Command is how a harness's CI invokes one test.
type Command struct {
	// Select are the pytest arguments before the test id that choose
	// what runs and which conftests load (-m perf, --confcutdir=...).
	// Paths in them are absolute: the working directory is the job's.
	Select []string
	// Options follow the test id, without --output-file (the runner adds
	// it).
	Options []string
	// PythonPath is what the harness's activate script puts on
	// PYTHONPATH, in order (absolute paths).
	PythonPath []string
	// CwdFiles are files of the checkout (relative paths) the harness
	// reads from its working directory; each is copied into the job's
	// working directory when the checkout has it.
	CwdFiles []string
	// LoopFromJob is set when the harness runs the job's loop_count (its
	// timed loop must be that long); unset, the test fixes its own.
	LoopFromJob bool
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
	// KillGrace is how long a cancelled harness gets between SIGTERM to
	// its process group and the kill of every process of its job. Default
	// 10s.
	KillGrace time.Duration
	// TempDir holds one room per job (device/box: log.txt and
	// report.json, the worker's; work/, tmp/ and out/, the job user's);
	// created (0711) if missing, and it must be searchable by the job user
	// along its path. Default os.TempDir()/benchfleet-harness. A room's
	// work/ and tmp/ are removed when its job ends; log.txt and
	// report.json stay for the worker to upload, and rooms older than
	// JobDirMaxAge are removed when a later job starts.
	TempDir string
	// Box is the sandbox every job runs in (device/box): its user (a uid
	// of its own per job under a root worker), walls, network and limits.
	// Its Root is TempDir and its Log the runner's; the rest is as
	// box.Config documents, zero values taking its defaults.
	Box box.Config
	// Builds provisions the build a job names (source.wheels: its wheels
	// in an environment over Python, its commit's test tree as the
	// checkout); nil = such jobs are invalid on this host.
	Builds device.Provisioner
	// HealthProbe is a known-good test id of this harness (e.g. the
	// checkout's resnet50 benchmark). When a job's run says the host is
	// broken (a *device.HostError), the worker runs it (Probe) at batch 1,
	// loop 1 on the same board before taking the host out of service: only
	// a failing probe confirms the fault. "" = no probe.
	HealthProbe string
}

// Runner runs one harness profile. It is safe for concurrent use: each Run
// has its own process and job directory.
type Runner struct {
	p      Profile
	cfg    Config
	box    *box.Box
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
	if cfg.HealthProbe != "" && !protocol.ValidTestID(cfg.HealthProbe) {
		return nil, fmt.Errorf("%s: health probe %q is not a relative pytest node id", name, cfg.HealthProbe)
	}
	for k, v := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("%s: env: invalid variable name %q", name, k)
		}
		if k == "TT_VISIBLE_DEVICES" {
			return nil, fmt.Errorf("%s: env must not set TT_VISIBLE_DEVICES (the runner sets it per device)", name)
		}
		if SecretName(k) {
			return nil, fmt.Errorf("%s: env %s looks like a secret: the harness runs pull requests' code, which would read it (give the harness what it needs without one, e.g. a model cache populated beforehand, bound read-only, with HF_HUB_OFFLINE=1)", name, k)
		}
		if filepath.IsAbs(v) {
			if st, err := os.Stat(v); err == nil && st.IsDir() {
				// A cache the operator names (HF_HOME): every job reads
				// it, none may write it for the next.
				cfg.Box.ReadOnly = append(slices.Clone(cfg.Box.ReadOnly), v)
			}
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
	log = log.With().Str("component", "harness").Str("harness", name).Logger()
	bc := cfg.Box
	bc.Root, bc.Log = cfg.TempDir, log
	b, err := box.New(bc)
	if err != nil {
		return nil, fmt.Errorf("%s: isolation: %w", name, err)
	}
	return &Runner{p: p, cfg: cfg, box: b, python: python, log: log}, nil
}

// Name implements device.Runner.
func (r *Runner) Name() string { return r.p.Name() }

// Close removes the warm sandboxes the runner's box holds for its next
// jobs (box.Config.Warm); call it once no job runs on the runner.
func (r *Runner) Close() error { return r.box.Close() }

// Isolation describes the box its jobs run in: the job user, how their
// processes are killed, and which walls stand.
func (r *Runner) Isolation() string {
	kill := "a cgroup per job"
	if !r.box.Cgroups() {
		kill = "the worker as subreaper (no writable cgroup v2)"
	}
	return "as " + r.box.User() + ", " + kill + "; walls: " + box.WallsSummary(r.box.Walls())
}

// Walls are the walls of the box its jobs run in.
func (r *Runner) Walls() []box.Wall { return r.box.Walls() }

// Check implements device.Runner.
func (r *Runner) Check(b protocol.Benchmark) error { return r.p.Check(b) }

// Probe implements device.Prober: Config.HealthProbe at batch 1, loop 1,
// warmup 1, run as a job is.
func (r *Runner) Probe(ctx context.Context, dev device.Device) (configured bool, err error) {
	if r.cfg.HealthProbe == "" {
		return false, nil
	}
	job := &protocol.Job{ID: "health-probe", Run: "health-probe", Pool: dev.Pool, Runner: r.Name(),
		Benchmark: protocol.Benchmark{Test: r.cfg.HealthProbe, BatchSize: 1, LoopCount: 1, WarmupCount: 1, DataFormat: protocol.FormatBfloat16}}
	if _, err := r.Run(ctx, job, dev, discard{}); err != nil {
		return true, fmt.Errorf("health probe %s: %w", r.cfg.HealthProbe, err)
	}
	return true, nil
}

// discard is a Recorder that keeps nothing.
type discard struct{}

func (discard) Phase(string)            {}
func (discard) Log(string)              {}
func (discard) Artifact(string, string) {}

// Argv returns the harness's full argv (interpreter first) for b, writing
// its report to outputFile and keeping pytest's cache in the job's working
// directory cwd.
func (r *Runner) Argv(b protocol.Benchmark, outputFile, cwd string) []string {
	return r.argv(r.python, r.cfg.Workdir, b, outputFile, cwd)
}

// argv is Argv for the interpreter python and the checkout.
func (r *Runner) argv(python, checkout string, b protocol.Benchmark, outputFile, cwd string) []string {
	c := r.p.Command(checkout, b)
	argv := []string{python, "-m", "pytest", "-svv"}
	argv = append(argv, c.Select...)
	argv = append(argv, filepath.Join(checkout, b.Test))
	argv = append(argv, c.Options...)
	return append(argv, "--output-file", outputFile,
		"--rootdir", checkout, "-o", "cache_dir="+filepath.Join(cwd, ".pytest_cache"))
}

// Run implements device.Runner. It returns ctx's error when ctx ends first
// (after killing the harness's process group); otherwise the outcome or a
// typed error from classify: *device.InvalidError (usage error, test not
// found or deselected), *device.HostError (the harness cannot start on this
// host), *device.BenchmarkError (the test failed), *device.JobError (the
// job's own crash: a signal, an exit code pytest does not give),
// *device.InfraError (Hang set for the upstream watchdog's SIGABRT).
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

	// A room of its own: another user, a fresh working directory and
	// TMPDIR, a cgroup; nothing of an earlier job's is in reach.
	// The log is the worker's, written beside the rooms before the job's
	// own room exists (provisioning logs to it).
	logDir, err := os.MkdirTemp(r.cfg.TempDir, "log-"+box.PathSafe(job.ID)+"-")
	if err != nil {
		return nil, device.Infra("%s: log directory: %v", r.Name(), err)
	}
	logPath := filepath.Join(logDir, ArtifactLog)
	reportPath := filepath.Join(logDir, ArtifactReport)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, device.Infra("%s: log file: %v", r.Name(), err)
	}
	defer logFile.Close()
	rec.Artifact(ArtifactLog, logPath)

	// The job's own build, when it names one: its commit's tree is the
	// checkout and its environment's interpreter runs the harness.
	python, checkout, lease, err := r.provision(ctx, job, rec, logFile, log)
	if err != nil {
		return nil, err
	}
	if lease != nil && lease.Release != nil {
		defer lease.Release()
	}
	command := r.p.Command(checkout, job.Benchmark)
	if lease != nil {
		// The environment's .pth lists the host's site directories after
		// the job's wheels; one on PYTHONPATH (tt-xla's activate puts
		// /usr/local/lib/python3.11/dist-packages there) would come
		// before them and could shadow the build under test.
		command.PythonPath = withoutSiteDirs(command.PythonPath)
	}
	// A room of its own, inside the sandbox's walls: a uid of its own,
	// the checkout, the environment and the wheels read-only, only its
	// board's device nodes; the checkout files the harness reads from its
	// working directory bound read-only there before it starts.
	spec := box.Spec{Job: job.ID, ReadOnly: append(envRoots(python), checkout), Devices: deviceNodes(dev)}
	if lease != nil {
		// A build's environment lists the harness environment's site
		// directories in its .pth: they must be in the box too.
		spec.ReadOnly = append(spec.ReadOnly, envRoots(r.python)...)
	}
	spec.ReadOnly = append(spec.ReadOnly, command.PythonPath...)
	for _, f := range command.CwdFiles {
		if spec.Files == nil {
			spec.Files = map[string]string{}
		}
		spec.Files[f] = filepath.Join(checkout, f)
	}
	// A board another process holds (a leftover of a crashed worker's,
	// an operator's tool) is the board's fault, never the job's.
	if err := r.boardFree(ctx, dev); err != nil {
		return nil, err
	}
	room, err := r.box.OpenSpec(spec)
	if err != nil {
		return nil, device.Infra("%s: %v", r.Name(), err)
	}
	defer room.Remove()
	outputPath := filepath.Join(room.Out, ArtifactReport)
	cwd := room.Work
	argv := r.argv(python, checkout, job.Benchmark, outputPath, cwd)
	env := Env(os.Environ(), r.cfg.Env, command.PythonPath, dev.Visible, dev.Arch)
	if _, set := r.cfg.Env["HOME"]; !set {
		env = append(env, "HOME="+room.Tmp) // the worker's is not the job's
	}
	if name := room.UserName(); name != "" {
		env = append(env, "USER="+name, "LOGNAME="+name)
	}
	fmt.Fprintf(logFile, "[benchfleet: job user %s; walls: %s]\n", room.User(), box.WallsSummary(r.box.Walls()))
	cmd := room.Cmd(argv, env)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, device.Infra("%s: pipe: %v", r.Name(), err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	fmt.Fprintf(logFile, "$ cd %s && PYTHONPATH=%s TT_VISIBLE_DEVICES=%s %s\n", cwd,
		strings.Join(command.PythonPath, ":"), dev.Visible, quoteArgv(argv))

	log.Info().Str("test", job.Benchmark.Test).Str("visible", dev.Visible).Msg("starting harness")
	start := time.Now()
	rec.Phase(device.PhaseCompile)
	if err := room.Start(cmd); err != nil {
		pr.Close()
		pw.Close()
		return nil, device.Infra("%s: start %s: %v", r.Name(), python, err)
	}
	pw.Close() // the child holds its own copy

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
		log.Warn().Err(ctx.Err()).Dur("grace", r.cfg.KillGrace).Msg("stopping harness: SIGTERM to its processes")
		room.Signal(syscall.SIGTERM)
		t := time.NewTimer(r.cfg.KillGrace)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			log.Warn().Msg("harness still running after the grace period: killing every process of its job")
			_ = room.Close() // the cgroup, or every orphan: not only its group
		}
	}()
	waitErr := room.Wait(cmd)
	end := time.Now()
	close(exited)
	<-watched
	// Whatever the harness left behind (a hung child holding the device or
	// the pipe, a daemon that left its group and session) goes with it;
	// then out/ is the worker's (a process of the job user outside the
	// room, see device/box, could still hold a file of it open).
	if err := room.Close(); err != nil {
		log.Warn().Err(err).Msg("the job's processes or room were not all cleaned up")
	}
	select {
	case <-scanned:
	case <-time.After(5 * time.Second):
		// Only a process outside the room (another of the job user's) can
		// hold the pipe now.
		log.Warn().Msg("harness output still open 5s after exit; closing it")
	}
	pr.Close()
	<-scanned
	sc.finish(end)
	fmt.Fprintf(logFile, "[benchfleet: harness exited after %s: %v]\n", end.Sub(start).Round(time.Millisecond), exitText(room.ExitStatus(waitErr)))

	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: harness stopped after %s: %w", r.Name(), end.Sub(start).Round(time.Millisecond), ctx.Err())
	}
	code, sig := room.ExitStatus(waitErr)
	if waitErr != nil && code < 0 && sig == 0 {
		return nil, device.Infra("%s: waiting for the harness: %v", r.Name(), waitErr)
	}
	if hits := room.Hits(); len(hits) > 0 {
		fmt.Fprintf(logFile, "[benchfleet: the job ran into its box's limits: %v]\n", hits)
		if waitErr != nil {
			_ = room.DropOut()
			return nil, limitError(hits, code, sig, sc)
		}
	}
	// The report is the harness's: a symlink, a fifo or a file too large
	// to be a report fails the job unread. What is kept and uploaded is
	// the worker's own copy of the bytes checked here.
	data, readErr := box.ReadFile(outputPath, MaxReportBytes)
	if err := room.DropOut(); err != nil { // whatever else the job left there
		log.Warn().Err(err).Msg("removing the job's output directory")
	}
	if readErr == nil {
		if err := os.WriteFile(reportPath, data, 0o600); err != nil {
			return nil, device.Infra("%s: keep the report: %v", r.Name(), err)
		}
		rec.Artifact(ArtifactReport, reportPath)
	}
	if err := classify(r.Name(), job.Benchmark.Test, code, sig, sc, readErr); err != nil {
		return nil, busyAfter(r.Name(), dev, err)
	}
	out, err := r.p.Outcome(data, job.Benchmark, sc)
	if err != nil {
		return nil, err
	}
	out.Upstream = ArtifactReport
	if out.Arch == "" {
		out.Arch = dev.Arch
	}
	if ran := ranBatch(out, job.Benchmark); ran != job.Benchmark.BatchSize {
		out.Notes = append(out.Notes, fmt.Sprintf("the harness ran batch size %d, not the job's %d (its report's batch_size; the test fixes its own)", ran, job.Benchmark.BatchSize))
		log.Warn().Int("ran", ran).Int("asked", job.Benchmark.BatchSize).Msg("the harness ran another batch size than the job asked for")
	}
	if err := verify(out, job.Benchmark, command, sc); err != nil {
		log.Warn().Err(err).Msg("the harness's report disagrees with what it printed")
		return nil, err
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
	logs, _ := filepath.Glob(filepath.Join(r.cfg.TempDir, "log-*"))
	for _, d := range append(dirs, logs...) {
		if st, err := os.Stat(d); err == nil && st.IsDir() && time.Since(st.ModTime()) > JobDirMaxAge {
			if err := box.RemoveRoom(d); err != nil {
				log.Warn().Err(err).Str("dir", d).Msg("removing an old job directory")
			}
		}
	}
}

func exitText(code int, sig syscall.Signal) string {
	if sig != 0 {
		return "killed by signal " + sig.String()
	}
	return fmt.Sprintf("exit status %d", code)
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
