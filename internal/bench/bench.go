// Package bench is benchfleet measuring itself (`benchfleet bench ...`).
// Every bench has the same shape: an XConfig whose Validate fills the
// defaults and names the first field out of range, RunX(ctx, cfg) that
// measures and returns an *XReport, and the report, which the command line
// prints and tests assert on. Figures that depend on the host are measured
// against a baseline taken in the same run (raw JetStream, the runner
// alone, venv and pip by hand), and each report carries the CPU steal
// seen while it was measured.
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/process"
)

// ConfigError is a Config a bench cannot run with, found by Validate or by
// a Run before it measures anything: the caller's to fix.
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

func configErr(format string, args ...any) error {
	return &ConfigError{msg: fmt.Sprintf(format, args...)}
}

// Median of xs: the middle value, or the mean of the two middle values of
// an even count; 0 for none. xs is not modified.
func Median[T ~float64 | ~int64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	a, b := s[n/2-1], s[n/2]
	return a + (b-a)/2
}

// Spread is the median, minimum and maximum of a bench's rounds.
type Spread struct {
	Median, Min, Max float64
}

// of is the spread as the benches print it: "<median> (median of <rounds>
// rounds; min <min>, max <max>)".
func (s Spread) of(rounds int) string {
	return fmt.Sprintf("%.3f (median of %d rounds; min %.3f, max %.3f)", s.Median, rounds, s.Min, s.Max)
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	return Spread{Median: Median(xs), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// Quantile of sorted ds by nearest rank (0 for none).
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Steal is the CPU steal (time the hypervisor gave this VM's CPUs to
// someone else) over a bench's measurement: timings on a VM whose CPUs were
// stolen say more about its neighbours than about benchfleet.
type Steal struct {
	// Known is unset where /proc/stat is unreadable (not Linux).
	Known bool
	// Percent of the machine's CPU time.
	Percent float64
}

// String is the note a bench prints last; empty when the steal is unknown.
func (s Steal) String() string {
	if !s.Known {
		return ""
	}
	note := ""
	if s.Percent >= 10 {
		note = "; the hypervisor took much of the CPU: re-measure when it is lower"
	}
	return fmt.Sprintf("cpu steal %.0f%% of the machine's CPU time during the run%s", s.Percent, note)
}

// print writes the note on a line of its own, if the steal is known.
func (s Steal) print(w io.Writer) {
	if s.Known {
		fmt.Fprintln(w, s)
	}
}

// stealMeter starts measuring the steal; the function it returns is the
// steal since.
func stealMeter() func() Steal {
	total0, steal0, _ := cpuTimes()
	return func() Steal {
		total, steal, ok := cpuTimes()
		if !ok || total <= total0 {
			return Steal{}
		}
		return Steal{Known: true, Percent: 100 * float64(steal-steal0) / float64(total-total0)}
	}
}

// fleet is what every bench but chaos runs on: an embedded NATS server
// under dir/nats with a client connection and benchfleet's topology, and a
// file store in dir/store. Worker processes are started on it as a bench
// needs them, each through worker/process as `benchfleet worker` starts
// its own.
type fleet struct {
	dir   string
	srv   *server.Server
	url   string
	nc    *nats.Conn
	js    jetstream.JetStream
	topo  *topology.Handles
	store *file.Bucket
}

// startFleet starts a fleet in dir; log receives the topology's warnings
// (JetStream not answering).
func startFleet(ctx context.Context, dir string, log zerolog.Logger) (*fleet, error) {
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		return nil, err
	}
	f := &fleet{dir: dir, srv: srv, url: srv.ClientURL()}
	if f.nc, err = nats.Connect(f.url); err == nil {
		if f.js, err = jetstream.New(f.nc); err == nil {
			f.topo, err = topology.Ensure(ctx, f.js, topology.Config{Log: log})
		}
	}
	if err == nil {
		f.store, err = file.NewBucket(filepath.Join(dir, "store"))
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

// startWorker starts a worker process of cfg on the fleet's store and on
// a connection of its own to the fleet's server, logging to cfg.Log. The
// process runs until its Stop or Kill, which close the connection.
func (f *fleet) startWorker(ctx context.Context, cfg worker.Config) (*process.Process, error) {
	cfg.Store = f.store
	dial := func(context.Context) (*nats.Conn, error) { return nats.Connect(f.url) }
	return process.Start(ctx, process.Options{Worker: cfg, Connect: dial}, cfg.Log)
}

// simSlots are n slots of one sim runner, sim-0 to sim-<n-1>.
func simSlots(n int) []worker.Slot {
	r := sim.New()
	slots := make([]worker.Slot, n)
	for i := range slots {
		slots[i] = worker.Slot{Device: simDevice(fmt.Sprintf("sim-%d", i)), Runner: r}
	}
	return slots
}

// submit publishes jobs as one run of normal priority.
func (f *fleet) submit(ctx context.Context, run string, jobs []*protocol.Job) (*submit.SubmitResult, error) {
	p := &submit.Submitter{JS: f.js, Runs: f.topo.Runs, Jobs: f.topo.Jobs}
	return p.Submit(ctx, submit.Submission{Run: run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs})
}

// simJobs are n sim jobs of run lasting d each, alike but for their index.
func simJobs(run string, n int, d time.Duration) ([]*protocol.Job, error) {
	jobs := make([]*protocol.Job, 0, n)
	for i := 0; i < n; i++ {
		spec := submit.JobSpec{Pool: "sim", Runner: "sim", Labels: map[string]string{"i": fmt.Sprint(i), sim.LabelDuration: d.String()},
			Benchmark: submit.BenchmarkSpec{Model: "noop", BatchSize: 1, LoopCount: 1}}
		j, err := spec.Job(run, submit.SourceSpec{})
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// discard is a Recorder that keeps nothing.
type discard struct{}

func (discard) Phase(string)            {}
func (discard) Log(string)              {}
func (discard) Artifact(string, string) {}
