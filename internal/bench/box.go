package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// Defaults of BoxConfig.
const (
	DefaultBoxJobs        = 200
	DefaultBoxSlots       = 2
	DefaultBoxJobDuration = 50 * time.Millisecond
	DefaultBoxRounds      = 3
	// DefaultPython is the harness's interpreter of the box and builds
	// benches.
	DefaultPython = "/usr/bin/python3"
)

// boxLoopCount is the timed loop of every job: its iterations last
// JobDuration/boxLoopCount each. The warmup is one iteration as long.
const boxLoopCount = 5

// BoxConfig configures `bench dispatch --box`: the box's cost per job (the
// job user switch and the cgroup per job that device/box adds to a harness
// job), as a ratio against the same job without them, measured through the
// whole fleet (an embedded NATS server, a file store, a worker with harness
// slots of the forge runner kind).
//
// The harness is a minimal one written at run time: a Python script (the
// system python3, standard library only) standing where the runner runs
// "<python> -m pytest ...", which prints forge's warmup (one iteration)
// and a timed loop whose iterations sum to the job's duration, the PCC
// line, and writes a forge-shaped report that passes the runner's checks.
//
// Each round runs the same jobs twice, back to back, on a worker started
// for each side: plain (sandbox "none", the job user "none", cgroup "off",
// no limits: the runner's least box) and boxed (the box a worker builds
// by default: bubblewrap, a uid per job under root, cgroup limits, a tmpfs
// room, each job's sandbox built while the slot's job before it ran).
// Both sides open a room per job (the runner always does), so the ratio
// is the cost of the walls.
// The plain side's kill mode makes the process a child subreaper, so the
// boxed side's rooms also scan for orphans when they close, as a cgroup
// worker that is a subreaper (or pid 1) does.
type BoxConfig struct {
	// Jobs is how many jobs each side of a round runs. Default 200; at
	// most 100000.
	Jobs int
	// Slots is the worker's harness slots (concurrent jobs). Default 2; at
	// most 256.
	Slots int
	// JobDuration is how long each job's timed loop lasts. Default 50ms;
	// at least 1ms, at most 1h.
	JobDuration time.Duration
	// Rounds is how many times both sides run; the median ratio is the
	// figure. Default 3; at most 100.
	Rounds int
	// Python is the interpreter the harness script's shebang names (an
	// absolute path). Default /usr/bin/python3.
	Python string
	// Progress receives a line as each side of a round starts. Default:
	// none.
	Progress io.Writer
	// Log receives the box's, the runners' and the workers' logs. Default:
	// no logging.
	Log zerolog.Logger
}

// Validate fills the defaults and names the first field out of range.
func (c *BoxConfig) Validate() error {
	if c.Jobs == 0 {
		c.Jobs = DefaultBoxJobs
	}
	if c.Slots == 0 {
		c.Slots = DefaultBoxSlots
	}
	if c.JobDuration == 0 {
		c.JobDuration = DefaultBoxJobDuration
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultBoxRounds
	}
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	switch {
	case c.Jobs < 1 || c.Jobs > 100_000:
		return configErr("jobs %d: must be between 1 and 100000", c.Jobs)
	case c.Slots < 1 || c.Slots > 256:
		return configErr("slots %d: must be between 1 and 256", c.Slots)
	case c.JobDuration < time.Millisecond || c.JobDuration > time.Hour:
		return configErr("job duration %s: must be between 1ms and 1h", c.JobDuration)
	case c.Rounds < 1 || c.Rounds > 100:
		return configErr("rounds %d: must be between 1 and 100", c.Rounds)
	case !filepath.IsAbs(c.Python):
		return configErr("python %q: must be an absolute path (it is the script's shebang)", c.Python)
	}
	return nil
}

// BoxSide is one side of a round: Jobs jobs through the fleet.
type BoxSide struct {
	// Wall is from the start of the submit to the last result's
	// finished_at (when the last runner returned).
	Wall time.Duration
	// Span is the mean attempt span (started_at to finished_at): one job
	// on a slot, room and harness included.
	Span time.Duration
}

// BoxRound is one plain side and one boxed side, run back to back.
type BoxRound struct {
	Plain, Boxed BoxSide
}

// Ratio is the boxed side's wall time over the plain side's: 1.05 is a
// box costing 5% of the job.
func (r BoxRound) Ratio() float64 { return r.Boxed.Wall.Seconds() / r.Plain.Wall.Seconds() }

// BoxReport is what `bench dispatch --box` measured.
type BoxReport struct {
	// The Config's values, defaults filled.
	Jobs, Slots int
	JobDuration time.Duration
	// Rounds in the order they ran.
	Rounds []BoxRound
	// Spread is over the rounds' ratios.
	Spread Spread
	// Box describes the boxed side's box: its job user and kill mode
	// (harness.Runner.Isolation).
	Box string
	// Switched is set when the boxed side runs jobs as another user (the
	// process is root); unset, it differs from the plain side by its kill
	// mode alone (Box says which).
	Switched bool
	Steal    Steal
	// StartP50 is the median time to run /bin/true in a fresh room of the
	// boxed side's box (open the room, start, wait, remove it: the
	// sandbox's start and end per job), a warm one (its sandbox built
	// while the one before ran), ColdP50 the same with every sandbox
	// built at its start, TrueP50 that of /bin/true alone, over StartRuns
	// runs each.
	StartP50, ColdP50, TrueP50 time.Duration
	StartRuns                  int
}

// CostPerJob is how much longer a job took boxed than plain in round r,
// per job per slot, from the rounds' wall times.
func (rep *BoxReport) CostPerJob(r BoxRound) time.Duration {
	return (r.Boxed.Wall - r.Plain.Wall) * time.Duration(rep.Slots) / time.Duration(rep.Jobs)
}

// RunBox measures, in a temporary directory it removes, and reports. An
// error is a failure of the measurement: a side whose jobs did not all
// pass names the first failure.
func RunBox(ctx context.Context, cfg BoxConfig) (*BoxReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	steal := stealMeter()
	dir, err := os.MkdirTemp("", "benchfleet-benchbox-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The job user reaches its rooms and the harness through here.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	// The harness is beside the rooms, not above them: the sandbox binds
	// the harness's environment, and a bind above the rooms is refused.
	hdir := filepath.Join(dir, "harness")
	if err := os.Mkdir(hdir, 0o755); err != nil {
		return nil, err
	}
	checkout, python, err := writeBoxHarness(hdir, cfg.Python, cfg.JobDuration/boxLoopCount)
	if err != nil {
		return nil, err
	}
	newRunner := func(side string, bc box.Config) (*harness.Runner, error) {
		r, err := harness.New(harness.Forge{}, harness.Config{Workdir: checkout, Python: python,
			TempDir: filepath.Join(dir, side), Box: bc}, cfg.Log)
		if err != nil {
			return nil, fmt.Errorf("%s side: %w", side, err)
		}
		return r, nil
	}
	plain, err := newRunner("plain", box.Config{User: box.UserNone, Cgroup: box.CgroupOff, Sandbox: box.SandboxNone, Walls: box.WallsWarn, Limits: box.Limits{Pids: -1, Memory: -1, CPUWeight: -1, Disk: -1}})
	if err != nil {
		return nil, err
	}
	// The boxed side's box is the one a worker builds by default.
	bc, err := configfile.IsolationSpec{}.Box()
	if err != nil {
		return nil, err
	}
	boxed, err := newRunner("boxed", bc)
	if err != nil {
		return nil, err
	}
	defer boxed.Close()
	f, err := startFleet(ctx, dir, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer f.close()
	rep := &BoxReport{Jobs: cfg.Jobs, Slots: cfg.Slots, JobDuration: cfg.JobDuration,
		Box: boxed.Isolation(), Switched: os.Geteuid() == 0}
	sides := []struct {
		name string
		r    *harness.Runner
	}{{"plain", plain}, {"boxed", boxed}}
	// One job on each runner alone first: a side that cannot run a job
	// fails here with the runner's own error, and the interpreter and the
	// script are in the page cache before any round is timed.
	for _, s := range sides {
		if err := checkBoxRunner(ctx, s.r, s.name, cfg.JobDuration); err != nil {
			return nil, err
		}
	}
	if rep.StartP50, rep.ColdP50, rep.TrueP50, err = measureStart(filepath.Join(dir, "starts"), bc, boxStartRuns); err != nil {
		return nil, fmt.Errorf("sandbox start: %w", err)
	}
	rep.StartRuns = boxStartRuns
	for i := 1; i <= cfg.Rounds; i++ {
		var round BoxRound
		for _, s := range sides {
			fmt.Fprintf(cfg.Progress, "round %d/%d: %s, %d jobs of %s on %d slots...\n", i, cfg.Rounds, s.name, cfg.Jobs, cfg.JobDuration, cfg.Slots)
			side, err := f.runBoxSide(ctx, &cfg, s.r, fmt.Sprintf("box-%d-%s", i, s.name))
			if err != nil {
				return nil, fmt.Errorf("round %d, %s side: %w", i, s.name, err)
			}
			if s.r == plain {
				round.Plain = side
			} else {
				round.Boxed = side
			}
		}
		rep.Rounds = append(rep.Rounds, round)
	}
	ratios := make([]float64, len(rep.Rounds))
	for i, r := range rep.Rounds {
		ratios[i] = r.Ratio()
	}
	rep.Spread = spreadOf(ratios)
	rep.Steal = steal()
	return rep, nil
}

// runBoxSide starts a worker with cfg.Slots slots of r, runs cfg.Jobs jobs
// as run, stops the worker and measures the side from the results.
func (f *fleet) runBoxSide(ctx context.Context, cfg *BoxConfig, r *harness.Runner, run string) (BoxSide, error) {
	workDir := filepath.Join(f.dir, "worker", run)
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return BoxSide{}, err
	}
	w, err := f.startWorker(ctx, worker.Config{ID: run, Slots: boxSlots(r, cfg.Slots), MaxDeliver: 1, WorkDir: workDir, Log: cfg.Log})
	if err != nil {
		return BoxSide{}, err
	}
	defer w.Stop(ctx)

	jobs, err := boxJobs(run, cfg.Jobs)
	if err != nil {
		return BoxSide{}, err
	}
	start := time.Now()
	res, err := f.submit(ctx, run, jobs)
	if err != nil {
		return BoxSide{}, err
	}
	wt := &watch.Watcher{JS: f.js, Manifest: res.Manifest, Store: f.store}
	states, err := wt.Wait(ctx, nil)
	if err != nil {
		return BoxSide{}, err
	}
	var last time.Time
	var spans time.Duration
	for _, st := range states {
		if st.Status() != protocol.StatusPassed {
			return BoxSide{}, fmt.Errorf("job %s: %s", st.Job.ID, failure(st))
		}
		last = latest(last, st.Result.FinishedAt)
		spans += st.Result.FinishedAt.Sub(st.Result.StartedAt)
	}
	return BoxSide{Wall: last.Sub(start), Span: spans / time.Duration(len(states))}, nil
}

// failure says why a job did not pass.
func failure(st *runstate.JobState) string {
	if st.Result != nil && st.Result.Error != nil {
		return fmt.Sprintf("%s: %s: %s", st.Status(), st.Result.Error.Class, st.Result.Error.Message)
	}
	if st.Message != "" {
		return fmt.Sprintf("%s: %s", st.Status(), st.Message)
	}
	return string(st.Status())
}

// boxSlots are n harness slots of r on fake n150 boards, each with a PCI
// address of its own for TT_VISIBLE_DEVICES.
func boxSlots(r device.Runner, n int) []worker.Slot {
	out := make([]worker.Slot, n)
	for i := range out {
		bdf := fmt.Sprintf("0000:%02x:00.0", i+1)
		out[i] = worker.Slot{
			Device: device.Device{ID: fmt.Sprintf("tt%d", i), Pool: "n150", Runner: protocol.RunnerForge, Arch: "wormhole",
				Chips: 1, BDFs: []string{bdf}, Visible: bdf, Healthy: true},
			Runner: r,
			Health: device.AlwaysHealthy{},
		}
	}
	return out
}

// boxTestID is the node id every job runs (the checkout is empty: the
// script stands in for pytest and collects nothing).
const boxTestID = "test_box.py::test_perf"

// boxJobs are n forge jobs of run, alike but for their index.
func boxJobs(run string, n int) ([]*protocol.Job, error) {
	jobs := make([]*protocol.Job, n)
	for i := range jobs {
		spec := submit.JobSpec{Pool: "n150", Runner: protocol.RunnerForge, Labels: map[string]string{"i": fmt.Sprint(i)},
			Benchmark: submit.BenchmarkSpec{Test: boxTestID, Model: "box-bench", BatchSize: 1, LoopCount: boxLoopCount, WarmupCount: 1}}
		j, err := spec.Job(run, submit.SourceSpec{})
		if err != nil {
			return nil, err
		}
		jobs[i] = j
	}
	return jobs, nil
}

// checkBoxRunner runs one job on r directly, as a slot would.
func checkBoxRunner(ctx context.Context, r *harness.Runner, side string, d time.Duration) error {
	jobs, err := boxJobs("box-check-"+side, 1)
	if err != nil {
		return err
	}
	dev := boxSlots(r, 1)[0].Device
	if _, err := r.Run(ctx, jobs[0], dev, discard{}); err != nil {
		return fmt.Errorf("%s side: a job of %s run on the runner alone: %w", side, d, err)
	}
	return nil
}

// boxStartRuns is how many times measureStart runs /bin/true each way.
const boxStartRuns = 40

// measureStart times /bin/true in a fresh room of box bc (the boxed
// side's walls), warm as a slot that runs job after job finds it, and
// cold, and alone, n times each, interleaved; it returns the medians.
func measureStart(root string, bc box.Config, n int) (warm, cold, plain time.Duration, err error) {
	bc.Root = root
	bc.Warm = box.WarmOn
	wb, err := box.New(bc)
	if err != nil {
		return 0, 0, 0, err
	}
	defer wb.Close()
	bc.Warm = box.WarmOff
	cb, err := box.New(bc)
	if err != nil {
		return 0, 0, 0, err
	}
	var ws, cs, ps []time.Duration
	for range n {
		for _, side := range []struct {
			b   *box.Box
			out *[]time.Duration
		}{{wb, &ws}, {cb, &cs}} {
			d, err := startTrue(side.b)
			if err != nil {
				return 0, 0, 0, err
			}
			*side.out = append(*side.out, d)
		}
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			return 0, 0, 0, err
		}
		ps = append(ps, time.Since(t0))
		// The next job comes once the warm box's next sandbox is built,
		// as it does after a job of any length.
		time.Sleep(boxStartPause)
	}
	return medianDur(ws), medianDur(cs), medianDur(ps), nil
}

// boxStartPause is how long measureStart waits between runs.
const boxStartPause = 50 * time.Millisecond

// startTrue runs /bin/true in a room of b: open, start, wait, remove.
func startTrue(b *box.Box) (time.Duration, error) {
	t0 := time.Now()
	r, err := b.Open("start")
	if err != nil {
		return 0, err
	}
	cmd := r.Cmd([]string{"/bin/true"}, []string{"PATH=/usr/bin:/bin"})
	if err := r.Start(cmd); err != nil {
		r.Remove()
		return 0, err
	}
	werr := r.Wait(cmd)
	if err := r.Remove(); err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, fmt.Errorf("/bin/true in the box: %w", werr)
	}
	return time.Since(t0), nil
}

func medianDur(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Print writes the report as `bench dispatch --box` prints it: the two
// boxes, each round's sides and ratio, the median and the steal.
func (rep *BoxReport) Print(w io.Writer) {
	fmt.Fprintf(w, "box: boxed jobs run %s; plain jobs without a sandbox (isolation sandbox none), as the worker's own user (user none), the worker as subreaper (cgroup off), no limits; both make a room per job\n", rep.Box)
	if !rep.Switched {
		fmt.Fprintln(w, "box: not root: jobs cannot switch users, so the boxed side differs from the plain one at most in how its processes are killed (a cgroup per job where the host allows one)")
	}
	for i, r := range rep.Rounds {
		for _, s := range []struct {
			name string
			side BoxSide
		}{{"plain", r.Plain}, {"boxed", r.Boxed}} {
			fmt.Fprintf(w, "round %d  %s  %d jobs of %s on %d slots  %7.2fs  %7.1f jobs/s  attempt mean %.2f ms\n",
				i+1, s.name, rep.Jobs, rep.JobDuration, rep.Slots, s.side.Wall.Seconds(), float64(rep.Jobs)/s.side.Wall.Seconds(), Ms(s.side.Span))
		}
		fmt.Fprintf(w, "round %d  ratio boxed/plain time %.3f, box cost %.2f ms/job per slot (attempt mean %+.2f ms)\n",
			i+1, r.Ratio(), Ms(rep.CostPerJob(r)), Ms(r.Boxed.Span-r.Plain.Span))
	}
	fmt.Fprintf(w, "sandbox start per job: p50 %.2f ms warm, %.2f ms cold (room, uid lease, cgroups, bubblewrap, /bin/true, removal) against /bin/true alone p50 %.2f ms, %d runs each\n",
		Ms(rep.StartP50), Ms(rep.ColdP50), Ms(rep.TrueP50), rep.StartRuns)
	fmt.Fprintf(w, "ratio boxed/plain time %s\n", rep.Spread.of(len(rep.Rounds)))
	rep.Steal.print(w)
}
