package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// DefaultWorkerCPUJobDuration is WorkerCPUConfig's default, for the
// command line's flag.
const DefaultWorkerCPUJobDuration = 10 * time.Second

// WorkerCPUConfig configures `bench worker-cpu`: the worker process's own
// CPU while one long sim job runs. Linux only (/proc).
type WorkerCPUConfig struct {
	// JobDuration is the length of the sim job the worker runs while it is
	// measured: 1s..1h.
	JobDuration time.Duration
	// Exe is the benchfleet binary whose `worker` subcommand is measured
	// (required).
	Exe string
}

// Validate names the first field out of range.
func (c *WorkerCPUConfig) Validate() error {
	switch {
	case c.JobDuration < time.Second || c.JobDuration > time.Hour:
		return configErr("--job-duration %s: want 1s..1h", c.JobDuration)
	case c.Exe == "":
		return configErr("worker-cpu: no benchfleet binary to run")
	}
	return nil
}

// WorkerCPUReport is what `bench worker-cpu` measured.
type WorkerCPUReport struct {
	JobDuration time.Duration
	// PID is the worker process's.
	PID int
	// CPU is the worker's CPU time over Window, the job's run less a
	// margin at each end (min(500ms, JobDuration/10)), so the claim and
	// the result's write are left out; Method says how it was read
	// ("schedstat", or "stat" in 10 ms ticks); StatCPU is the same by
	// /proc/<pid>/stat. Share is CPU as % of one core; Resolution is one
	// 10 ms tick as % of the window.
	CPU, StatCPU, Window time.Duration
	Method               string
	Share, Resolution    float64
	// AttemptCPU is the worker's CPU over the whole attempt (claimed to
	// its terminal event, AttemptWall); AttemptShare as % of one core.
	AttemptCPU, AttemptWall time.Duration
	AttemptShare            float64
	// SampleCPU is the CPU of one telemetry sample of a fake board's
	// hwmon files (in process); SamplerShare is that as % of one core at
	// one sample per device.SampleInterval.
	SampleCPU    time.Duration
	SamplerShare float64
}

// RunWorkerCPU starts an embedded NATS server and a file store, runs
// "<Exe> worker --slots sim=1" as a subprocess, submits one sim job and
// reads the worker's CPU time from /proc while the job runs. The sim
// runner only sleeps, so the figure is the worker's own: InProgress
// heartbeats, the status heartbeat, the KV watchers, idle timers.
func RunWorkerCPU(ctx context.Context, cfg WorkerCPUConfig) (*WorkerCPUReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.JobDuration
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return nil, fmt.Errorf("worker-cpu: needs /proc: %w", err)
	}
	dir, err := os.MkdirTemp("", "benchfleet-workercpu-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	f, err := startFleet(ctx, dir, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer f.close()
	const run, id = "worker-cpu", "cpu-bench"
	jobs, err := simJobs(run, 1, d)
	if err != nil {
		return nil, err
	}
	job := jobs[0]
	events := make(chan protocol.Event, 64)
	sub, err := f.nc.Subscribe(protocol.RunEventsFilter(run), func(m *nats.Msg) {
		if e, err := protocol.DecodeEvent(m.Data); err == nil {
			select {
			case events <- *e:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()

	p, err := startProc(cfg.Exe, filepath.Join(dir, "worker.log"), "worker", "--nats", f.url, "--store", "file://"+filepath.Join(dir, "store"),
		"--id", id, "--slots", "sim=1", "--work-dir", filepath.Join(dir, "work"), "--log-format", "json", "--log-level", "warn")
	if err != nil {
		return nil, fmt.Errorf("worker-cpu: start worker: %w", err)
	}
	defer p.stop()
	// The worker is up once its heartbeat shows its slot idle.
	if err := p.waitFor(ctx, 30*time.Second, func() bool {
		e, err := f.topo.Workers.Get(ctx, id)
		if err != nil {
			return false
		}
		var st protocol.WorkerStatus
		return json.Unmarshal(e.Value(), &st) == nil && len(st.Devices) == 1 && st.Devices[0].State == protocol.DeviceIdle
	}); err != nil {
		return nil, p.fail(fmt.Errorf("worker not ready: %w", err))
	}
	if _, err := f.submit(ctx, run, jobs); err != nil {
		return nil, err
	}
	claimed, err := p.waitEvent(ctx, events, 30*time.Second, func(e protocol.Event) bool { return e.Kind == protocol.EventClaimed })
	if err != nil {
		return nil, p.fail(fmt.Errorf("job not claimed: %w", err))
	}
	pid := p.cmd.Process.Pid
	var attempt0, cpu0, cpu1, attempt1 cpuReading
	if attempt0, err = procCPU(pid); err != nil {
		return nil, p.fail(err)
	}
	margin := min(500*time.Millisecond, d/10)
	sleepUntil(ctx, claimed.Add(margin))
	if cpu0, err = procCPU(pid); err != nil {
		return nil, p.fail(err)
	}
	t0 := time.Now()
	sleepUntil(ctx, claimed.Add(d-margin))
	if cpu1, err = procCPU(pid); err != nil {
		return nil, p.fail(err)
	}
	window := time.Since(t0)
	if _, err := p.waitEvent(ctx, events, d+30*time.Second, func(e protocol.Event) bool {
		return e.Kind == protocol.EventPassed || e.Kind == protocol.EventFailed || e.Kind == protocol.EventCancelled
	}); err != nil {
		return nil, p.fail(fmt.Errorf("job not finished: %w", err))
	}
	if attempt1, err = procCPU(pid); err != nil {
		return nil, p.fail(err)
	}
	attemptWall := time.Since(claimed)
	r, err := storage.ReadResult(ctx, f.store, storage.ResultKey(job.CreatedAt, run, job.ID))
	if err != nil {
		return nil, p.fail(fmt.Errorf("no result: %w", err))
	}
	if r.Status != protocol.StatusPassed {
		return nil, p.fail(fmt.Errorf("the job %s, not passed", r.Status))
	}
	rep := &WorkerCPUReport{JobDuration: d, PID: pid, StatCPU: cpu1.stat - cpu0.stat, Window: window,
		Resolution: share(10*time.Millisecond, window), AttemptWall: attemptWall}
	rep.CPU, rep.Method = cpu1.sub(cpu0)
	rep.Share = share(rep.CPU, window)
	rep.AttemptCPU, _ = attempt1.sub(attempt0)
	rep.AttemptShare = share(rep.AttemptCPU, attemptWall)
	if rep.SampleCPU, err = samplerCost(ctx, dir); err != nil {
		return nil, err
	}
	rep.SamplerShare = share(rep.SampleCPU, device.SampleInterval)
	return rep, nil
}

// samplerCost is the CPU time of one TTSampler sample of a fake board's
// hwmon files under dir, averaged over many.
func samplerCost(ctx context.Context, dir string) (time.Duration, error) {
	sys := filepath.Join(dir, "sys")
	hw := filepath.Join(sys, "tenstorrent!0", "device", "hwmon", "hwmon0")
	if err := os.MkdirAll(hw, 0o755); err != nil {
		return 0, err
	}
	for name, v := range map[string]string{"power1_input": "87500000\n", "temp1_input": "51250\n"} {
		if err := os.WriteFile(filepath.Join(hw, name), []byte(v), 0o644); err != nil {
			return 0, err
		}
	}
	s := device.NewTTSampler(device.DiscoverConfig{SysRoot: sys, DevRoot: filepath.Join(dir, "dev")})
	dev := device.Device{ID: "tt0", Nodes: []int{0}}
	const n = 2000
	var ru0, ru1 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru0); err != nil {
		return 0, err
	}
	for range n {
		if _, err := s.Sample(ctx, dev); err != nil {
			return 0, fmt.Errorf("sampler: %w", err)
		}
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru1); err != nil {
		return 0, err
	}
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	return cpu / n, nil
}

// proc is a supervised subprocess whose output goes to a log file.
type proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

func startProc(exe, logPath string, args ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.exited) }()
	return p, nil
}

// stop asks the process to end (SIGTERM) and kills it after 10s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// fail is err with the process's log.
func (p *proc) fail(err error) error {
	log, _ := os.ReadFile(p.log)
	return fmt.Errorf("worker-cpu: %w (worker log:\n%s)", err, strings.TrimSpace(string(log)))
}

// waitFor polls cond every 50ms until it holds, the process exits, or
// timeout.
func (p *proc) waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return errors.New("the worker exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not after %s", timeout)
		}
	}
	return nil
}

// waitEvent returns the time of the first event matching ok.
func (p *proc) waitEvent(ctx context.Context, events <-chan protocol.Event, timeout time.Duration, ok func(protocol.Event) bool) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case e := <-events:
			if ok(e) {
				return time.Now(), nil
			}
		case <-p.exited:
			return time.Time{}, errors.New("the worker exited")
		case <-t.C:
			return time.Time{}, fmt.Errorf("no event after %s", timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// Print writes the report as `bench worker-cpu` prints it.
func (rep *WorkerCPUReport) Print(w io.Writer) {
	fmt.Fprintf(w, "worker cpu while a %s sim job runs: %.3f%% of a core (%s of cpu over %.2fs, %s; /proc/%d/stat: %s, ±%.3f%% in 10 ms ticks)\n",
		rep.JobDuration, rep.Share, rep.CPU.Round(time.Microsecond), rep.Window.Seconds(), rep.Method, rep.PID, rep.StatCPU, rep.Resolution)
	fmt.Fprintf(w, "whole attempt (claimed to its terminal event, %.2fs): %.3f%% of a core (%s)\n",
		rep.AttemptWall.Seconds(), rep.AttemptShare, rep.AttemptCPU.Round(time.Microsecond))
	fmt.Fprintf(w, "telemetry sampler (hwmon, one board): %.1f µs of cpu per sample, %.3f%% of a core at one sample per %s\n",
		float64(rep.SampleCPU)/float64(time.Microsecond), rep.SamplerShare, device.SampleInterval)
}
