package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// ChaosConfig configures `bench chaos`, which proves the delivery contract
// (at-least-once delivery, exactly-once results) with real processes: it
// starts an embedded NATS server and a file store, starts worker processes
// (the benchfleet binary's `worker` subcommand with sim slots), submits sim
// jobs, SIGKILLs random busy workers at random moments (restarting each),
// waits until every job has a result or a dead letter, and counts lost and
// duplicated results.
type ChaosConfig struct {
	// Jobs sim jobs over Workers worker processes of Slots sim slots each.
	Jobs, Workers, Slots int
	// Kills SIGKILLs of random busy workers during the run (each restarted).
	Kills int
	// JobDuration is the sim duration of one job.
	JobDuration time.Duration
	// AckWait of the queue: a killed worker's jobs come back after it.
	AckWait time.Duration
	// MaxDeliver deliveries of a job before it is dead-lettered.
	MaxDeliver int
	// Timeout gives up waiting (0: from the job count, kills and ack wait).
	Timeout time.Duration
	// Seed of kill times and victims. Default (0): from the clock.
	Seed uint64
	// Dir holds NATS data, the store and worker logs (required).
	Dir string
	// Exe is the benchfleet binary the workers run (required).
	Exe string
	// Log receives the harness's progress.
	Log zerolog.Logger
}

// Validate fills the defaults and names the first field out of range.
func (f *ChaosConfig) Validate() error {
	if f.Seed == 0 {
		f.Seed = uint64(time.Now().UnixNano())
	}
	switch {
	case f.Jobs < 1 || f.Jobs > 100_000:
		return configErr("jobs %d: must be between 1 and 100000", f.Jobs)
	case f.Workers < 1 || f.Workers > 64:
		return configErr("workers %d: must be between 1 and 64", f.Workers)
	case f.Slots < 1 || f.Slots > 64:
		return configErr("slots per worker %d: must be between 1 and 64", f.Slots)
	case f.Kills < 0 || f.Kills > 1000:
		return configErr("kills %d: must be between 0 and 1000", f.Kills)
	case f.JobDuration < 0 || f.JobDuration > time.Hour:
		return configErr("job duration %s: must be between 0 and 1h", f.JobDuration)
	case f.AckWait < time.Second:
		return configErr("ack wait %s: must be at least 1s", f.AckWait)
	case f.MaxDeliver < 1 || f.MaxDeliver > 100:
		return configErr("max deliver %d: must be between 1 and 100", f.MaxDeliver)
	case f.Timeout < 0:
		return configErr("timeout %s: must not be negative", f.Timeout)
	}
	return nil
}

// ChaosReport is what a chaos run counted.
type ChaosReport struct {
	// Jobs submitted; Results recorded (one per job at most); Lost: jobs
	// with neither a result nor a dead letter; Duplicates: results written
	// more than once (every write is witnessed by the writer's terminal
	// event and its "job finished" log line); Redelivered: results of
	// attempt > 1.
	Jobs, Results, Lost, Duplicates, Redelivered int
	// Kills sent; UnexpectedExits of workers the run did not kill; Dead
	// letters of the run; Caught duplicate deliveries the write-once
	// result refused.
	Kills, UnexpectedExits, Dead, Caught int
	// LostJobs are the lost jobs' ids; DupJobs say which attempts wrote a
	// duplicated result.
	LostJobs, DupJobs []string
	Elapsed           time.Duration
	// Seed is the run's (ChaosConfig.Seed, or the clock's).
	Seed uint64
}

// OK says that no job was lost or recorded twice.
func (rep *ChaosReport) OK() bool { return rep.Lost == 0 && rep.Duplicates == 0 }

// Print writes the report as `bench chaos` prints it: its one line to out,
// the details (seed, kills, dead letters, lost and duplicated jobs) to
// details.
func (rep *ChaosReport) Print(out, details io.Writer) {
	fmt.Fprintf(out, "jobs %d results %d lost %d duplicates %d redelivered %d\n",
		rep.Jobs, rep.Results, rep.Lost, rep.Duplicates, rep.Redelivered)
	fmt.Fprintf(details, "chaos: seed %d; %d kills, %d unexpected worker exits; %d dead letters; %d duplicate deliveries caught (result already recorded); %s\n",
		rep.Seed, rep.Kills, rep.UnexpectedExits, rep.Dead, rep.Caught, rep.Elapsed.Round(10*time.Millisecond))
	for _, job := range rep.LostJobs {
		fmt.Fprintf(details, "chaos: lost job %s\n", job)
	}
	for _, d := range rep.DupJobs {
		fmt.Fprintf(details, "chaos: duplicate result for %s\n", d)
	}
}

// RunChaos runs one chaos run in cfg.Dir and reports what it counted. An
// error is a failure of the harness itself; lost or duplicated results are
// in the report.
func RunChaos(ctx context.Context, cfg ChaosConfig) (*ChaosReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1|1))
	c := &chaosRun{f: &cfg, dir: cfg.Dir, exe: cfg.Exe, rng: rng, log: cfg.Log.With().Str("component", "chaos").Logger()}
	defer c.cleanup()
	return c.run(ctx)
}

// chaosWorker is one worker subprocess slot of the chaos run: the process
// currently running under its id (restarted after each kill).
type chaosWorker struct {
	id    string
	args  []string
	log   *os.File
	cmd   *exec.Cmd
	done  chan struct{}
	kills int
	// exits counts exits the chaos run did not cause.
	exits int
}

type chaosRun struct {
	f   *ChaosConfig
	dir string
	exe string
	rng *rand.Rand
	log zerolog.Logger

	cleanups []func()
	mu       sync.Mutex
	workers  []*chaosWorker
}

func (c *chaosRun) cleanup() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
}

func (c *chaosRun) run(ctx context.Context) (*ChaosReport, error) {
	f := c.f
	start := time.Now()
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(c.dir, "nats"), Name: "benchfleet-chaos"})
	if err != nil {
		return nil, err
	}
	c.cleanups = append(c.cleanups, func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := srv.ClientURL()
	storeDir := filepath.Join(c.dir, "store")
	store, err := file.NewBucket(storeDir)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, nats.Name("benchfleet-chaos"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("chaos: connect: %w", err)
	}
	c.cleanups = append(c.cleanups, nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("chaos: jetstream: %w", err)
	}
	tc := topology.Config{AckWait: f.AckWait}
	topo, err := topology.Ensure(ctx, js, tc)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}

	// Worker processes: this binary, re-executed as `benchfleet worker`.
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	workDir := filepath.Join(c.dir, "work")
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	c.cleanups = append(c.cleanups, c.stopWorkers)
	for i := range f.Workers {
		id := fmt.Sprintf("chaos-%d", i+1)
		lf, err := os.OpenFile(filepath.Join(c.dir, "logs", id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		w := &chaosWorker{id: id, log: lf, args: []string{
			"worker", "--nats", url, "--store", "file://" + storeDir, "--id", id,
			"--slots", fmt.Sprintf("sim=%d", f.Slots), "--ack-wait", f.AckWait.String(),
			"--max-deliver", strconv.Itoa(f.MaxDeliver), "--work-dir", workDir,
			"--log-format", "json", "--log-level", "info",
		}}
		c.workers = append(c.workers, w)
		if err := c.start(w); err != nil {
			return nil, err
		}
	}
	if err := c.waitHeartbeats(ctx, topo.Workers, 60*time.Second); err != nil {
		return nil, err
	}

	// Submit the jobs.
	run := protocol.NewRunID(time.Now(), "chaos")
	jobs := make([]*protocol.Job, 0, f.Jobs)
	for i := range f.Jobs {
		spec := submit.JobSpec{Pool: protocol.RunnerSim, Runner: protocol.RunnerSim,
			Labels:    map[string]string{"i": strconv.Itoa(i), sim.LabelDuration: f.JobDuration.String()},
			Benchmark: submit.BenchmarkSpec{Model: "simnet", BatchSize: 4, LoopCount: 10}}
		j, err := spec.Job(run, submit.SourceSpec{})
		if err != nil {
			return nil, fmt.Errorf("chaos: job %d: %w", i, err)
		}
		j.Priority = protocol.PriorityNormal
		jobs = append(jobs, j)
	}
	sub := &submit.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs, Store: store, Log: c.log}
	sres, err := sub.Submit(ctx, submit.Submission{Run: run, Submitter: "bench chaos", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	created := sres.Manifest.CreatedAt
	c.log.Info().Str("run", run).Int("jobs", f.Jobs).Int("workers", f.Workers).Int("kills", f.Kills).Msg("chaos run submitted")

	// Kill times: spread over the part of the run when workers are surely
	// busy, by the ideal throughput.
	rounds := (f.Jobs + f.Workers*f.Slots - 1) / (f.Workers * f.Slots)
	est := time.Duration(rounds) * f.JobDuration
	killAt := make([]time.Duration, f.Kills)
	for i := range killAt {
		killAt[i] = est/20 + time.Duration(c.rng.Float64()*float64(est)*0.65)
	}
	slices.Sort(killAt)
	timeout := f.Timeout
	if timeout == 0 {
		timeout = 2*est + time.Duration(f.Kills+f.MaxDeliver+2)*2*f.AckWait + 2*time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	resultsPrefix := fmt.Sprintf("%sdate=%s/run=%s/", storage.PrefixResults, storage.DatePartition(created), run)
	countDone := func() (int, error) {
		n := 0
		for _, err := range store.List(wctx, resultsPrefix) {
			if err != nil {
				return 0, err
			}
			n++
		}
		info, err := topo.Dead.Info(wctx)
		if err != nil {
			return 0, err
		}
		return n + int(info.State.Msgs), nil
	}
	submitted := time.Now()
	kills := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		if n, err := countDone(); err == nil && n >= f.Jobs {
			break
		}
		if kills < len(killAt) && time.Since(submitted) >= killAt[kills] {
			if err := c.killOne(wctx, topo.Workers); err != nil {
				return nil, err
			}
			kills++
		}
		c.restartExited()
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return nil, fmt.Errorf("chaos: %w", ctx.Err())
			}
			c.log.Error().Dur("timeout", timeout).Msg("gave up waiting for every job to end")
			break wait
		case <-tick.C:
		}
	}
	// Workers drain and leave; their logs are complete after this.
	c.stopWorkers()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer rcancel()
	return c.count(rctx, js, store, run, jobs, kills, start)
}

// count builds the report from the store, the dead letters, the events
// and the worker logs.
func (c *chaosRun) count(ctx context.Context, js jetstream.JetStream, store storage.Bucket, run string, jobs []*protocol.Job, kills int, start time.Time) (*ChaosReport, error) {
	rep := &ChaosReport{Jobs: len(jobs), Kills: kills, Elapsed: time.Since(start), Seed: c.f.Seed}
	results, bad, err := index.QueryJSON(ctx, store, index.Filter{Run: run})
	if err != nil {
		return nil, fmt.Errorf("chaos: read results: %w", err)
	}
	if bad > 0 {
		return nil, fmt.Errorf("chaos: %d unreadable results", bad)
	}
	byJob := map[string]*protocol.Result{}
	for _, r := range results {
		byJob[r.Job] = r
		if r.Attempt > 1 {
			rep.Redelivered++
		}
	}
	rep.Results = len(byJob)
	dead := map[string]bool{}
	err = chaosReadStream(ctx, js, protocol.StreamDead, protocol.SubjectDeadPrefix+".>", func(data []byte) {
		var dl protocol.DeadLetter
		if json.Unmarshal(data, &dl) == nil && dl.Run == run {
			dead[dl.ID] = true
		}
	})
	if err != nil {
		return nil, err
	}
	rep.Dead = len(dead)

	// writers[job] holds every attempt seen writing the job's result: the
	// stored one, every terminal event (published only after a write) and
	// every "job finished" log line (logged only after a write).
	writers := map[string]map[string]bool{}
	wrote := func(job, worker string, attempt int) {
		if writers[job] == nil {
			writers[job] = map[string]bool{}
		}
		writers[job][fmt.Sprintf("%s#%d", worker, attempt)] = true
	}
	for _, r := range results {
		wrote(r.Job, r.Worker.ID, r.Attempt)
	}
	err = chaosReadStream(ctx, js, protocol.StreamEvents, protocol.RunEventsFilter(run), func(data []byte) {
		e, err := protocol.DecodeEvent(data)
		if err == nil && e.Kind.Terminal() && e.Kind != protocol.EventDead {
			wrote(e.Job, e.Worker, e.Attempt)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, w := range c.workers {
		rep.UnexpectedExits += w.exits
		if err := chaosScanLog(w.log.Name(), run, wrote, &rep.Caught); err != nil {
			return nil, err
		}
	}
	for _, j := range jobs {
		if byJob[j.ID] == nil && !dead[j.ID] {
			rep.Lost++
			rep.LostJobs = append(rep.LostJobs, j.ID)
		}
		if n := len(writers[j.ID]); n > 1 {
			rep.Duplicates += n - 1
			ws := slices.Sorted(maps.Keys(writers[j.ID]))
			rep.DupJobs = append(rep.DupJobs, j.ID+" written by "+strings.Join(ws, ", "))
		}
	}
	return rep, nil
}

// chaosScanLog reads a worker's JSON log: "job finished" lines are result
// writes; "result already recorded" lines are duplicate deliveries the
// write-once result caught.
func chaosScanLog(path, run string, wrote func(job, worker string, attempt int), caught *int) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Message string `json:"message"`
			Run     string `json:"run"`
			Job     string `json:"job"`
			Worker  string `json:"worker"`
			Attempt int    `json:"attempt"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Run != run {
			continue
		}
		switch {
		case l.Message == "job finished":
			wrote(l.Job, l.Worker, l.Attempt)
		case strings.HasPrefix(l.Message, "result already recorded"):
			*caught++
		}
	}
	// A SIGKILLed worker may leave a torn last line; that is not an error.
	return nil
}

// chaosReadStream reads every message of stream matching filter, oldest first.
func chaosReadStream(ctx context.Context, js jetstream.JetStream, stream, filter string, fn func([]byte)) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("chaos: read %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("chaos: read %s: %w", stream, err)
	}
	pending := info.NumPending
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 1000)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("chaos: read %s: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			fn(m.Data())
			if meta, err := m.Metadata(); err == nil {
				pending = meta.NumPending
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("chaos: read %s: %w", stream, err)
		}
		if n == 0 {
			return fmt.Errorf("chaos: read %s: %d messages still pending", stream, pending)
		}
	}
	return nil
}

// start runs w's process. Its output is appended to w's log.
func (c *chaosRun) start(w *chaosWorker) error {
	cmd := exec.Command(c.exe, w.args...)
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start worker %s: %w", w.id, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	c.mu.Lock()
	w.cmd, w.done = cmd, done
	c.mu.Unlock()
	return nil
}

func chaosExited(w *chaosWorker) bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// restartExited restarts workers that exited on their own (which the run
// did not ask for, so it is counted).
func (c *chaosRun) restartExited() {
	for _, w := range c.workers {
		if chaosExited(w) {
			w.exits++
			c.log.Warn().Str("worker", w.id).Msg("worker exited on its own; restarting it")
			if err := c.start(w); err != nil {
				c.log.Error().Err(err).Msg("restart failed")
			}
		}
	}
}

// killOne sends SIGKILL to a random worker that is running a job (any
// worker if none reports one), waits for it to die and starts it again.
func (c *chaosRun) killOne(ctx context.Context, kv jetstream.KeyValue) error {
	var busy []*chaosWorker
	for _, w := range c.workers {
		if chaosExited(w) {
			continue
		}
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		e, err := kv.Get(gctx, w.id)
		cancel()
		if err != nil {
			continue
		}
		var st protocol.WorkerStatus
		if json.Unmarshal(e.Value(), &st) != nil {
			continue
		}
		for _, d := range st.Devices {
			if d.State == protocol.DeviceBusy {
				busy = append(busy, w)
				break
			}
		}
	}
	if len(busy) == 0 {
		busy = c.workers
	}
	w := busy[c.rng.IntN(len(busy))]
	if err := w.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("chaos: kill worker %s: %w", w.id, err)
	}
	<-w.done
	w.kills++
	c.log.Info().Str("worker", w.id).Int("pid", w.cmd.Process.Pid).Msg("worker killed with SIGKILL; restarting it")
	return c.start(w)
}

// waitHeartbeats waits until every worker has written its heartbeat.
func (c *chaosRun) waitHeartbeats(ctx context.Context, kv jetstream.KeyValue, d time.Duration) error {
	deadline := time.Now().Add(d)
	for _, w := range c.workers {
		for {
			gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := kv.Get(gctx, w.id)
			cancel()
			if err == nil {
				break
			}
			if chaosExited(w) {
				return fmt.Errorf("chaos: worker %s exited at start; see %s", w.id, w.log.Name())
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("chaos: worker %s not up after %s; see %s", w.id, d, w.log.Name())
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// stopWorkers asks every worker to drain (SIGTERM), and kills those still
// running after 15s.
func (c *chaosRun) stopWorkers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.workers {
		if w.cmd != nil && !chaosExited(w) {
			_ = w.cmd.Process.Signal(os.Interrupt)
		}
	}
	grace := time.NewTimer(15 * time.Second)
	defer grace.Stop()
	expired := false
	for _, w := range c.workers {
		if w.cmd == nil {
			continue
		}
		if !expired {
			select {
			case <-w.done:
				continue
			case <-grace.C:
				expired = true
			}
		}
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}
