// Package benchbox measures the box's cost per job (`benchfleet bench
// dispatch --box`): the job user switch and the cgroup per job that
// device/box adds to a harness job, as a ratio against the same job
// without them, measured through the whole fleet (an embedded NATS server,
// a file store, a worker with harness slots of the forge runner kind).
//
// The harness is a minimal one written at run time: a Python script (the
// system python3, standard library only) standing where the runner runs
// "<python> -m pytest ...", which prints forge's warmup (one iteration)
// and a timed loop whose iterations sum to the job's duration, the PCC
// line, and writes a forge-shaped report that passes the runner's checks.
//
// Each round runs the same jobs twice, back to back, on a worker started
// for each side: plain (the job user "none", cgroup "off": the runner's
// least box) and boxed (the default user, nobody under root, and cgroup
// "auto"). Both sides open a room per job (the runner always does), so the
// ratio is the cost of the user switch and the cgroup, not of the room.
// The plain side's kill mode makes the process a child subreaper, so the
// boxed side's rooms also scan for orphans when they close, as a cgroup
// worker that is a subreaper (or pid 1) does.
package benchbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

// Defaults of Config.
const (
	DefaultJobs        = 200
	DefaultSlots       = 2
	DefaultJobDuration = 50 * time.Millisecond
	DefaultRounds      = 3
	DefaultPython      = "/usr/bin/python3"
)

// LoopCount is the timed loop of every job: its iterations last
// JobDuration/LoopCount each. The warmup is one iteration as long.
const LoopCount = 5

// Config configures one measurement.
type Config struct {
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
func (c *Config) Validate() error {
	if c.Jobs == 0 {
		c.Jobs = DefaultJobs
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.JobDuration == 0 {
		c.JobDuration = DefaultJobDuration
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	switch {
	case c.Jobs < 1 || c.Jobs > 100_000:
		return fmt.Errorf("jobs %d: must be between 1 and 100000", c.Jobs)
	case c.Slots < 1 || c.Slots > 256:
		return fmt.Errorf("slots %d: must be between 1 and 256", c.Slots)
	case c.JobDuration < time.Millisecond || c.JobDuration > time.Hour:
		return fmt.Errorf("job duration %s: must be between 1ms and 1h", c.JobDuration)
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("rounds %d: must be between 1 and 100", c.Rounds)
	case !filepath.IsAbs(c.Python):
		return fmt.Errorf("python %q: must be an absolute path (it is the script's shebang)", c.Python)
	}
	return nil
}

// Side is one side of a round: Jobs jobs through the fleet.
type Side struct {
	// Wall is from the start of the submit to the last result's
	// finished_at (when the last runner returned).
	Wall time.Duration
	// Span is the mean attempt span (started_at to finished_at): one job
	// on a slot, room and harness included.
	Span time.Duration
}

// Round is one plain side and one boxed side, run back to back.
type Round struct {
	Plain, Boxed Side
}

// Ratio is the boxed side's wall time over the plain side's: 1.05 is a
// box costing 5% of the job.
func (r Round) Ratio() float64 { return r.Boxed.Wall.Seconds() / r.Plain.Wall.Seconds() }

// Report is what one measurement found.
type Report struct {
	// The Config's values, defaults filled.
	Jobs, Slots int
	JobDuration time.Duration
	// Rounds in the order they ran.
	Rounds []Round
	// Median, Min and Max of the rounds' ratios.
	Median, Min, Max float64
	// Box describes the boxed side's box: its job user and kill mode
	// (harness.Runner.Isolation).
	Box string
	// Switched is set when the boxed side runs jobs as another user (the
	// process is root); unset, it differs from the plain side by its kill
	// mode alone (Box says which).
	Switched bool
}

// CostPerJob is how much longer a job took boxed than plain in round r,
// per job per slot, from the rounds' wall times.
func (rep *Report) CostPerJob(r Round) time.Duration {
	return (r.Boxed.Wall - r.Plain.Wall) * time.Duration(rep.Slots) / time.Duration(rep.Jobs)
}

// Run measures, in a temporary directory it removes, and reports. An error
// is a failure of the measurement: a side whose jobs did not all pass
// names the first failure.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "benchfleet-benchbox-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The job user reaches its rooms and the harness through here.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	checkout, python, err := writeHarness(dir, cfg.Python, cfg.JobDuration/LoopCount)
	if err != nil {
		return nil, err
	}
	newRunner := func(side, user, cgroup string) (*harness.Runner, error) {
		r, err := harness.New(harness.Forge{}, harness.Config{Workdir: checkout, Python: python,
			TempDir: filepath.Join(dir, side), User: user, Cgroup: cgroup}, cfg.Log)
		if err != nil {
			return nil, fmt.Errorf("%s side: %w", side, err)
		}
		return r, nil
	}
	plain, err := newRunner("plain", box.UserNone, box.CgroupOff)
	if err != nil {
		return nil, err
	}
	boxed, err := newRunner("boxed", "", box.CgroupAuto)
	if err != nil {
		return nil, err
	}
	f, err := startFleet(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer f.close()
	rep := &Report{Jobs: cfg.Jobs, Slots: cfg.Slots, JobDuration: cfg.JobDuration,
		Box: boxed.Isolation(), Switched: os.Geteuid() == 0}
	sides := []struct {
		name string
		r    *harness.Runner
	}{{"plain", plain}, {"boxed", boxed}}
	// One job on each runner alone first: a side that cannot run a job
	// fails here with the runner's own error, and the interpreter and the
	// script are in the page cache before any round is timed.
	for _, s := range sides {
		if err := checkRunner(ctx, s.r, s.name, cfg.JobDuration); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= cfg.Rounds; i++ {
		var round Round
		for _, s := range sides {
			fmt.Fprintf(cfg.Progress, "round %d/%d: %s, %d jobs of %s on %d slots...\n", i, cfg.Rounds, s.name, cfg.Jobs, cfg.JobDuration, cfg.Slots)
			side, err := f.runSide(ctx, &cfg, s.r, fmt.Sprintf("box-%d-%s", i, s.name))
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
	rep.Min, rep.Max = slices.Min(ratios), slices.Max(ratios)
	slices.Sort(ratios)
	rep.Median = ratios[len(ratios)/2]
	return rep, nil
}

// fleet is an embedded NATS server and a file store; a worker is started
// on them for each side of a round.
type fleet struct {
	dir   string
	srv   *server.Server
	url   string
	nc    *nats.Conn
	js    jetstream.JetStream
	topo  *topology.Handles
	store *storage.FileBucket
}

func startFleet(ctx context.Context, dir string) (*fleet, error) {
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		return nil, err
	}
	f := &fleet{dir: dir, srv: srv, url: srv.ClientURL()}
	if f.nc, err = nats.Connect(f.url); err == nil {
		if f.js, err = jetstream.New(f.nc); err == nil {
			f.topo, err = topology.Ensure(ctx, f.js, topology.Config{})
		}
	}
	if err == nil {
		f.store, err = storage.NewFileBucket(filepath.Join(dir, "store"))
	}
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func (f *fleet) close() {
	if f.nc != nil {
		f.nc.Close()
	}
	f.srv.Shutdown()
}

// runSide starts a worker with cfg.Slots slots of r, runs cfg.Jobs jobs as
// run, stops the worker and measures the side from the results.
func (f *fleet) runSide(ctx context.Context, cfg *Config, r *harness.Runner, run string) (Side, error) {
	wnc, err := nats.Connect(f.url)
	if err != nil {
		return Side{}, err
	}
	defer wnc.Close()
	workDir := filepath.Join(f.dir, "worker", run)
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return Side{}, err
	}
	w, err := worker.New(worker.Config{ID: run, Conn: wnc, Store: f.store, Slots: slots(r, cfg.Slots),
		MaxDeliver: 1, WorkDir: workDir, Log: cfg.Log})
	if err != nil {
		return Side{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		<-w.Done()
	}()
	if err := w.Start(wctx); err != nil {
		return Side{}, err
	}
	defer func() { _ = w.Stop(ctx) }()

	jobs, err := benchJobs(run, cfg.Jobs)
	if err != nil {
		return Side{}, err
	}
	start := time.Now()
	p := &producer.Submitter{JS: f.js, Runs: f.topo.Runs, Jobs: f.topo.Jobs}
	res, err := p.Submit(ctx, producer.Submission{Run: run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		return Side{}, err
	}
	wt := &producer.Watcher{JS: f.js, Manifest: res.Manifest, Store: f.store}
	states, err := wt.Wait(ctx, nil)
	if err != nil {
		return Side{}, err
	}
	var last time.Time
	var spans time.Duration
	for _, st := range states {
		if st.Status() != protocol.StatusPassed {
			return Side{}, fmt.Errorf("job %s: %s", st.Job.ID, failure(st))
		}
		last = latest(last, st.Result.FinishedAt)
		spans += st.Result.FinishedAt.Sub(st.Result.StartedAt)
	}
	return Side{Wall: last.Sub(start), Span: spans / time.Duration(len(states))}, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// failure says why a job did not pass.
func failure(st *producer.JobState) string {
	if st.Result != nil && st.Result.Error != nil {
		return fmt.Sprintf("%s: %s: %s", st.Status(), st.Result.Error.Class, st.Result.Error.Message)
	}
	if st.Message != "" {
		return fmt.Sprintf("%s: %s", st.Status(), st.Message)
	}
	return string(st.Status())
}

// slots are n harness slots of r on fake n150 boards, each with a PCI
// address of its own for TT_VISIBLE_DEVICES.
func slots(r device.Runner, n int) []worker.Slot {
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

// testID is the node id every job runs (the checkout is empty: the script
// stands in for pytest and collects nothing).
const testID = "test_box.py::test_perf"

// benchJobs are n forge jobs of run, alike but for their index.
func benchJobs(run string, n int) ([]*protocol.Job, error) {
	jobs := make([]*protocol.Job, n)
	for i := range jobs {
		spec := producer.JobSpec{Pool: "n150", Runner: protocol.RunnerForge, Labels: map[string]string{"i": fmt.Sprint(i)},
			Benchmark: producer.BenchmarkSpec{Test: testID, Model: "box-bench", BatchSize: 1, LoopCount: LoopCount, WarmupCount: 1}}
		j, err := spec.Job(run, producer.SourceSpec{})
		if err != nil {
			return nil, err
		}
		jobs[i] = j
	}
	return jobs, nil
}

// checkRunner runs one job on r directly, as a slot would.
func checkRunner(ctx context.Context, r *harness.Runner, side string, d time.Duration) error {
	jobs, err := benchJobs("box-check-"+side, 1)
	if err != nil {
		return err
	}
	dev := slots(r, 1)[0].Device
	if _, err := r.Run(ctx, jobs[0], dev, discard{}); err != nil {
		return fmt.Errorf("%s side: a job of %s run on the runner alone: %w", side, d, err)
	}
	return nil
}

// discard is a Recorder that keeps nothing.
type discard struct{}

func (discard) Phase(string)            {}
func (discard) Log(string)              {}
func (discard) Artifact(string, string) {}
