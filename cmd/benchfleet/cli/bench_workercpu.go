package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) benchWorkerCPUCmd() *cobra.Command {
	var jobDuration time.Duration
	cmd := &cobra.Command{
		Use:   "worker-cpu [--job-duration D]",
		Short: "Measure the worker process's own CPU while one long job runs",
		Long: `Starts an embedded NATS server and a file store, runs the real worker as a
subprocess (this binary, "benchfleet worker --slots sim=1"), submits one sim
job lasting D, and reads the worker process's CPU time (the sum of its threads'
/proc/<pid>/task/*/schedstat run times, in ns; utime + stime from
/proc/<pid>/stat, in 10 ms ticks, is printed beside it) over the job's window: from its claimed
event plus a margin to its end minus the margin (margin min(500ms, D/10)),
so the claim and the result's write are left out. Prints that as % of one
core (the worker's own overhead: InProgress heartbeats, the status
heartbeat to bench-workers, the cancel and release KV watchers, idle
timers), and the whole attempt's figure (claimed to its terminal event).

The sim runner itself only sleeps, so the figure is the worker's; a real
board's slot also samples its sensors every 250 ms, whose cost per sample
is printed on the last line (hwmon files of a fake board, in process).

Linux only (/proc).`,
		Example: `  benchfleet bench worker-cpu --job-duration 10s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if jobDuration < time.Second || jobDuration > time.Hour {
				return usageErr("--job-duration %s: want 1s..1h", jobDuration)
			}
			return a.benchWorkerCPU(cmd.Context(), jobDuration)
		},
	}
	cmd.Flags().DurationVar(&jobDuration, "job-duration", 10*time.Second, "length of the sim job the worker runs while it is measured")
	return cmd
}

func (a *app) benchWorkerCPU(ctx context.Context, d time.Duration) error {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return fmt.Errorf("worker-cpu: needs /proc: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("worker-cpu: own executable: %w", err)
	}
	dir, err := os.MkdirTemp("", "benchfleet-workercpu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bn, err := startBenchNATS(ctx, dir)
	if err != nil {
		return err
	}
	defer bn.close()
	srv, nc, js, topo := bn.srv, bn.nc, bn.js, bn.topo
	storeDir := filepath.Join(dir, "store")
	store, err := storage.NewFileBucket(storeDir)
	if err != nil {
		return err
	}
	const run, id = "worker-cpu", "cpu-bench"
	jobs, err := benchJobs(run, 1, d)
	if err != nil {
		return err
	}
	job := jobs[0]
	// Events of the run, as the worker publishes them.
	events := make(chan protocol.Event, 64)
	sub, err := nc.Subscribe(protocol.RunEventsFilter(run), func(m *nats.Msg) {
		if e, err := protocol.DecodeEvent(m.Data); err == nil {
			select {
			case events <- *e:
			default:
			}
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()

	logPath := filepath.Join(dir, "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "worker", "--nats", srv.ClientURL(), "--store", "file://"+storeDir, "--id", id,
		"--slots", "sim=1", "--work-dir", filepath.Join(dir, "work"), "--log-format", "json", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("worker-cpu: start worker: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	fail := func(err error) error {
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("worker-cpu: %w (worker log:\n%s)", err, strings.TrimSpace(string(log)))
	}
	// The worker is up once its heartbeat shows its slot idle.
	if err := waitFor(ctx, exited, 30*time.Second, func() bool {
		e, err := topo.Workers.Get(ctx, id)
		if err != nil {
			return false
		}
		var st protocol.WorkerStatus
		return json.Unmarshal(e.Value(), &st) == nil && len(st.Devices) == 1 && st.Devices[0].State == protocol.DeviceIdle
	}); err != nil {
		return fail(fmt.Errorf("worker not ready: %w", err))
	}
	p := &producer.Submitter{JS: js, Runs: topo.Runs, Jobs: topo.Jobs}
	if _, err := p.Submit(ctx, producer.Submission{Run: run, Submitter: "bench", Priority: protocol.PriorityNormal, Jobs: jobs}); err != nil {
		return err
	}
	claimed, err := waitEvent(ctx, events, exited, 30*time.Second, func(e protocol.Event) bool { return e.Kind == protocol.EventClaimed })
	if err != nil {
		return fail(fmt.Errorf("job not claimed: %w", err))
	}
	pid := cmd.Process.Pid
	attempt0, err := procCPU(pid)
	if err != nil {
		return fail(err)
	}
	margin := min(500*time.Millisecond, d/10)
	from, to := claimed.Add(margin), claimed.Add(d-margin)
	sleepUntil(ctx, from)
	cpu0, err := procCPU(pid)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	sleepUntil(ctx, to)
	cpu1, err := procCPU(pid)
	if err != nil {
		return fail(err)
	}
	window := time.Since(t0)
	if _, err := waitEvent(ctx, events, exited, d+30*time.Second, func(e protocol.Event) bool {
		return e.Kind == protocol.EventPassed || e.Kind == protocol.EventFailed || e.Kind == protocol.EventCancelled
	}); err != nil {
		return fail(fmt.Errorf("job not finished: %w", err))
	}
	attempt1, err := procCPU(pid)
	if err != nil {
		return fail(err)
	}
	attemptWall := time.Since(claimed)
	r, err := storage.ReadResult(ctx, store, storage.ResultKey(job.CreatedAt, run, job.ID))
	if err != nil {
		return fail(fmt.Errorf("no result: %w", err))
	}
	if r.Status != protocol.StatusPassed {
		return fail(fmt.Errorf("the job %s, not passed", r.Status))
	}
	used, how := cpu1.sub(cpu0)
	ticks := cpu1.stat - cpu0.stat
	fmt.Fprintf(a.stdout, "worker cpu while a %s sim job runs: %.3f%% of a core (%s of cpu over %.2fs, %s; /proc/%d/stat: %s, ±%.3f%% in 10 ms ticks)\n",
		d, pct(used, window), used.Round(time.Microsecond), window.Seconds(), how, pid, ticks, pct(10*time.Millisecond, window))
	whole, _ := attempt1.sub(attempt0)
	fmt.Fprintf(a.stdout, "whole attempt (claimed to its terminal event, %.2fs): %.3f%% of a core (%s)\n",
		attemptWall.Seconds(), pct(whole, attemptWall), whole.Round(time.Microsecond))
	per, err := samplerCost(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "telemetry sampler (hwmon, one board): %.1f µs of cpu per sample, %.3f%% of a core at one sample per %s\n",
		float64(per)/float64(time.Microsecond), pct(per, device.SampleInterval), device.SampleInterval)
	return nil
}

func pct(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}

// cpuReading is a process's CPU time so far, two ways.
type cpuReading struct {
	stat  time.Duration // utime + stime from /proc/<pid>/stat (10 ms ticks)
	sched time.Duration // sum of its threads' run time from schedstat (ns); -1 if unavailable
}

// procCPU reads the process's CPU time: user + system time from
// /proc/<pid>/stat (fields 14 and 15, in USER_HZ = 100 ticks a second on
// Linux), and the sum over its threads of /proc/<pid>/task/*/schedstat's
// first field (time on a CPU, in ns), which resolves a quiet process's
// few milliseconds.
func procCPU(pid int) (cpuReading, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuReading{}, err
	}
	st, err := parseProcStatCPU(string(b))
	if err != nil {
		return cpuReading{}, err
	}
	r := cpuReading{stat: st, sched: -1}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return r, nil
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return r, nil
		}
		sum += time.Duration(ns)
	}
	if len(tasks) > 0 {
		r.sched = sum
	}
	return r, nil
}

// sub is r - o, by schedstat where both have it, else by stat.
func (r cpuReading) sub(o cpuReading) (time.Duration, string) {
	if r.sched >= 0 && o.sched >= 0 && r.sched >= o.sched {
		return r.sched - o.sched, "schedstat"
	}
	return r.stat - o.stat, "stat"
}

func parseProcStatCPU(stat string) (time.Duration, error) {
	// The command (field 2) may hold spaces and parentheses: the fields
	// after it start past its last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command field")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("/proc stat: too few fields")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// samplerCost is the CPU time of one TTSampler sample of a fake board's
// hwmon files under dir, averaged over many.
func samplerCost(dir string) (time.Duration, error) {
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
		if _, err := s.Sample(context.Background(), dev); err != nil {
			return 0, fmt.Errorf("sampler: %w", err)
		}
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru1); err != nil {
		return 0, err
	}
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	return cpu / n, nil
}

func sleepUntil(ctx context.Context, t time.Time) {
	if d := time.Until(t); d > 0 {
		sleepCtx(ctx, d)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// waitFor polls cond every 50ms until it holds, the worker exits, or
// timeout.
func waitFor(ctx context.Context, exited <-chan struct{}, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
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
func waitEvent(ctx context.Context, events <-chan protocol.Event, exited <-chan struct{}, timeout time.Duration, ok func(protocol.Event) bool) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case e := <-events:
			if ok(e) {
				return time.Now(), nil
			}
		case <-exited:
			return time.Time{}, errors.New("the worker exited")
		case <-t.C:
			return time.Time{}, fmt.Errorf("no event after %s", timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}
