package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// jobTraces is what the jobs of a worker's rooms are seen by while they
// run: their rooms (Root/job-<id>-<token>), the marks their processes
// carry (device/box's BENCHFLEET_BOX=<worker mark>.<token>), their uids
// and their cgroups (v2 and v1 directories, from /proc/<pid>/cgroup).
type jobTraces struct {
	rooms   []string
	tokens  map[string]bool
	uids    map[string]bool
	cgroups map[string]bool
}

// traceJobs reads the rooms under root and the processes they run.
func traceJobs(root string) *jobTraces {
	tr := &jobTraces{tokens: map[string]bool{}, uids: map[string]bool{}, cgroups: map[string]bool{}}
	tr.rooms, _ = filepath.Glob(filepath.Join(root, "job-*"))
	for _, d := range tr.rooms {
		base := filepath.Base(d)
		tr.tokens[base[strings.LastIndexByte(base, '-')+1:]] = true
	}
	for _, pid := range tr.procs() {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if i := bytes.Index(status, []byte("\nUid:")); i >= 0 {
			line, _, _ := bytes.Cut(status[i+5:], []byte("\n"))
			for _, f := range bytes.Fields(line) {
				if string(f) != "0" {
					tr.uids[string(f)] = true
				}
			}
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		for line := range strings.Lines(string(cg)) {
			f := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(f) != 3 || !strings.HasPrefix(filepath.Base(f[2]), "benchfleet-job-") {
				continue
			}
			cands := []string{filepath.Join("/sys/fs/cgroup", f[2]), filepath.Join("/sys/fs/cgroup/unified", f[2])}
			for _, ctl := range strings.Split(f[1], ",") {
				cands = append(cands, filepath.Join("/sys/fs/cgroup", ctl, f[2]))
			}
			for _, c := range cands {
				if st, err := os.Stat(c); err == nil && st.IsDir() {
					tr.cgroups[c] = true
				}
			}
		}
	}
	return tr
}

// procs are the live processes that carry one of the rooms' marks or run
// as one of their uids.
func (tr *jobTraces) procs() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if len(status) == 0 || bytes.Contains(status, []byte("\nState:\tZ")) {
			continue
		}
		ours := false
		if i := bytes.Index(status, []byte("\nUid:")); i >= 0 {
			line, _, _ := bytes.Cut(status[i+5:], []byte("\n"))
			for _, f := range bytes.Fields(line) {
				ours = ours || tr.uids[string(f)]
			}
		}
		// A process marked as another room's is that room's, whatever its
		// uid (a later job's may lease the same one).
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("BENCHFLEET_BOX=")); ok {
				i := bytes.LastIndexByte(v, '.')
				ours = i >= 0 && tr.tokens[string(v[i+1:])]
			}
		}
		if ours {
			out = append(out, pid)
		}
	}
	return out
}

// left lists what is left of the jobs: their processes (pid and name),
// cgroups, and rooms (a directory, or its tmpfs still mounted).
func (tr *jobTraces) left() (procs, cgroups, rooms []string) {
	for _, pid := range tr.procs() {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		procs = append(procs, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(comm))))
	}
	for cg := range tr.cgroups {
		if _, err := os.Stat(cg); err == nil {
			cgroups = append(cgroups, cg)
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, d := range tr.rooms {
		if _, err := os.Lstat(d); err == nil {
			rooms = append(rooms, d)
		}
		if bytes.Contains(mi, []byte(" "+filepath.Join(d, "j")+" ")) {
			rooms = append(rooms, d+" (its tmpfs mounted)")
		}
	}
	return procs, cgroups, rooms
}

// Issue 36, finding 7: the real worker binary runs two forge jobs (real
// pytest in the box, each leaving a daemon of its own session, each
// holding its board) on a host with two boards, and is killed with
// SIGKILL while they run. Restarted, before it claims anything it kills
// every process of those jobs and removes their rooms (their tmpfs) and
// cgroups; the jobs, redelivered to the same boards, pass. Without the
// box's sandbox (isolation sandbox: none, as on a host without
// bubblewrap), the jobs' processes outlive the worker and would hold the
// boards.
func TestWorkerKilledWithJobsRunningCleansUpAtRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, isolation string }{
		{"box as shipped", ""},
		{"no sandbox", "isolation: {sandbox: none, walls: warn}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fleettest.Server(t)
			dir := t.TempDir()
			storeURL := "file://" + filepath.Join(dir, "store")
			tmp := filepath.Join(dir, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			host := harnesstest.NewTTHost(t, 2)
			ck := harnesstest.NewCheckout(t, "forge", filepath.Join(dir, "forge"), false)
			cfg := filepath.Join(dir, "worker.yaml")
			writeFile(t, cfg, fmt.Sprintf(`nats: %s
store: %s
id: tt-crashy
slots:
  - {pool: n150, runner: forge, devices: ["0"]}
  - {pool: n150, runner: forge, devices: ["1"]}
discovery: {tt_smi: %s, dev_root: %s, sysfs_root: %s}
forge:
  workdir: %s
  python: %s
  env: {FAKE_ITER_MS: "250", FAKE_DEV_LOCK: %q, FAKE_DAEMON: "1"}
%s`, srv.ClientURL(), storeURL, host.TTSMI, host.DevRoot, host.Sys, ck.Workdir, ck.Python, devLocks(host), tc.isolation))
			rooms := filepath.Join(tmp, "forge") // the harness's rooms: <work dir>/<harness>

			const runID = "crash-cleanup"
			matrix := filepath.Join(dir, "matrix.yaml")
			// ~10 s a job: the worker is killed well inside it.
			writeFile(t, matrix, fmt.Sprintf(`run: %s
defaults:
  pool: n150
  runner: forge
  benchmark: {test: %q, model: resnet50, loop_count: 36, warmup_count: 4}
matrix:
  batch_size: [1, 2]
`, runID, harnesstest.ForgeResNet50))
			if code, out, errOut := run(t, "submit", "--nats", srv.ClientURL(), "--store", storeURL, "--matrix", matrix,
				"--ack-wait", "10s", "--log-level", "warn"); code != 0 {
				t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
			}
			crashy, crashyOut := startWorkerCmd(t, cfg, tmp)
			t.Cleanup(func() {
				_ = crashy.Process.Kill()
				_ = crashy.Wait()
				if t.Failed() {
					t.Logf("the killed worker's output:\n%s", crashyOut.String())
				}
			})
			// Both jobs run their harness, each with its daemon.
			var tr *jobTraces
			fleettest.Eventually(t, 2*time.Minute, "both jobs running with their daemons", func() bool {
				tr = traceJobs(rooms)
				procs, _, _ := tr.left()
				daemons := 0
				for _, p := range procs {
					if strings.HasSuffix(p, "(sleep)") {
						daemons++
					}
				}
				// Two rooms of the jobs, and with the box as shipped up to
				// two warm rooms for the jobs after them.
				return len(tr.rooms) >= 2 && daemons == 2 && len(tr.cgroups) > 0
			})
			if err := crashy.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = crashy.Wait()
			killedAt := time.Now()
			time.Sleep(time.Second) // what dies with the worker has died
			procs, cgroups, left := tr.left()
			t.Logf("left by the killed worker: processes %v; cgroups %v; rooms %v", procs, cgroups, left)
			if len(left) == 0 {
				t.Fatalf("the killed worker left no room: nothing to clean up\n%s", crashyOut.String())
			}

			startWorkerBinary(t, cfg, tmp) // the same worker, restarted
			fleettest.Eventually(t, time.Minute, "the restarted worker's heartbeat", func() bool {
				code, out, _ := run(t, "fleet", "status", "--nats", srv.ClientURL(), "--format", "json")
				var sts []protocol.WorkerStatus
				if code != 0 || json.Unmarshal([]byte(out), &sts) != nil {
					return false
				}
				for _, st := range sts {
					if st.ID == "tt-crashy" && st.StartedAt.After(killedAt) {
						return true
					}
				}
				return false
			})
			procs, cgroups, left = tr.left()
			if len(procs)+len(cgroups)+len(left) > 0 {
				t.Errorf("left after the restart: processes %v; cgroups %v; rooms %v; want none", procs, cgroups, left)
			}
			fleettest.Eventually(t, 3*time.Minute, "both results", func() bool {
				return len(queryRunByJob(t, storeURL, runID)) == 2
			})
			for id, r := range queryRunByJob(t, storeURL, runID) {
				if r.Status != protocol.StatusPassed || r.Attempt != 2 {
					t.Errorf("job %s: %s at attempt %d (%+v), want passed at its redelivery (attempt 2)", id, r.Status, r.Attempt, r.Error)
				}
			}
		})
	}
}

// devLocks is the fake forge's FAKE_DEV_LOCK for host: each board's BDF
// and device node, so a process of the harness holds its board.
func devLocks(host *harnesstest.TTHost) string {
	var parts []string
	for _, n := range host.Nodes {
		parts = append(parts, host.BDFs[n]+"="+filepath.Join(host.DevRoot, strconv.Itoa(n)))
	}
	return strings.Join(parts, ",")
}
