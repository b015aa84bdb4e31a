//go:build linux

package box

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sweepHelper is the test binary as a worker that dies with its jobs
// running (BOX_TEST_HELPER=sweep): it opens two rooms in BOX_TEST_ROOT
// (sandbox BOX_TEST_SANDBOX, a uid of their own each, cgroups when the
// host has them), starts in each a job that leaves a daemon of its own
// (setsid: outside its process group, reparented when its parent dies),
// prints each room's directory and "ready", and waits to be killed.
func sweepHelper() int {
	b, err := New(Config{Root: os.Getenv("BOX_TEST_ROOT"), Sandbox: os.Getenv("BOX_TEST_SANDBOX"), Walls: WallsWarn})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	for _, job := range []string{"sweep-a", "sweep-b"} {
		r, err := b.Open(job)
		if err != nil {
			fmt.Println(err)
			return 2
		}
		cmd := r.Cmd([]string{"/bin/sh", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > $TMPDIR/daemon; exec sleep 600"}, []string{"PATH=/usr/bin:/bin"})
		if err := r.Start(cmd); err != nil {
			fmt.Println(err)
			return 2
		}
		for _, err := os.Stat(filepath.Join(r.Tmp, "daemon")); err != nil; _, err = os.Stat(filepath.Join(r.Tmp, "daemon")) {
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Println("room", r.Dir)
	}
	fmt.Println("ready")
	select {}
}

// A worker SIGKILLed while its jobs run leaves their rooms (a mounted
// tmpfs each), their cgroups and, without the sandbox's pid namespace,
// their daemons. A later box over the same Root sweeps them at start:
// every process of the rooms is killed, every cgroup and room removed.
func TestSweepCleansUpAfterAWorkerKilledWithJobsRunning(t *testing.T) {
	needRoot(t)
	for _, sandbox := range []string{SandboxNone, SandboxBwrap} {
		t.Run("sandbox "+sandbox, func(t *testing.T) {
			root := filepath.Join(place(t), "root")
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), "BOX_TEST_HELPER=sweep", "BOX_TEST_ROOT="+root, "BOX_TEST_SANDBOX="+sandbox)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var rooms []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if dir, ok := strings.CutPrefix(line, "room "); ok {
					rooms = append(rooms, dir)
					continue
				}
				if line != "ready" {
					t.Fatalf("helper: %s", line)
				}
				break
			}
			if len(rooms) != 2 {
				t.Fatalf("helper made rooms %q", rooms)
			}
			// The records name what each room holds.
			var recs []roomRecord
			for _, dir := range rooms {
				data, err := os.ReadFile(filepath.Join(dir, roomRecordName))
				if err != nil {
					t.Fatal(err)
				}
				var rec roomRecord
				if err := json.Unmarshal(data, &rec); err != nil || rec.Token == "" || rec.UID == 0 {
					t.Fatalf("record of %s: %s (%v)", dir, data, err)
				}
				recs = append(recs, rec)
			}
			// The worker dies; its jobs' rooms stay.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			left := func() (procs []int, cgroups, mounts []string) {
				for _, rec := range recs {
					p, _ := processesOf(rec.UID)
					procs = append(procs, p...)
					for _, cg := range rec.Cgroups {
						if _, err := os.Stat(cg); err == nil {
							cgroups = append(cgroups, cg)
						}
					}
				}
				mi, _ := os.ReadFile("/proc/self/mountinfo")
				for _, dir := range rooms {
					if strings.Contains(string(mi), " "+filepath.Join(dir, "j")+" ") {
						mounts = append(mounts, dir)
					}
				}
				return procs, cgroups, mounts
			}
			procs, cgroups, mounts := left()
			t.Logf("left by the killed worker: processes %v, cgroups %v, mounted rooms %v", procs, cgroups, mounts)
			if sandbox == SandboxNone && len(procs) < 2 {
				t.Fatalf("the daemons died with the worker (%v): nothing for the sweep to kill", procs)
			}
			if len(mounts) != 2 {
				t.Fatalf("mounted rooms %v after the kill, want both", mounts)
			}

			b, err := New(Config{Root: root, Sandbox: sandbox, Walls: WallsWarn})
			if err != nil {
				t.Fatal(err)
			}
			// A live room of this worker's is not the sweep's.
			live, err := b.Open("live")
			if err != nil {
				t.Fatal(err)
			}
			defer live.Remove()
			rep, err := b.Sweep()
			if err != nil {
				t.Fatalf("sweep: %v (%s)", err, rep)
			}
			t.Logf("swept %s", rep)
			// (The live room's uid lease may have killed a daemon first: a
			// dead worker's lease is swept when it is leased again.)
			if rep.Rooms != 2 || rep.Cgroups != len(cgroups) || (sandbox == SandboxNone && rep.Processes == 0) {
				t.Errorf("swept %s; want 2 rooms, %d cgroups and, without a sandbox, the daemons", rep, len(cgroups))
			}
			procs, cgroups, mounts = left()
			if len(procs) != 0 || len(cgroups) != 0 || len(mounts) != 0 {
				t.Fatalf("after the sweep: processes %v, cgroups %v, mounted rooms %v; want none", procs, cgroups, mounts)
			}
			for _, dir := range rooms {
				if _, err := os.Lstat(dir); !os.IsNotExist(err) {
					t.Fatalf("room %s still there (%v)", dir, err)
				}
			}
			if _, err := os.Stat(live.Dir); err != nil {
				t.Fatalf("the live room was swept: %v", err)
			}
		})
	}
}

// A room without a record (an older version's, or one whose worker died
// while making it) is swept once it is older than a minute and no live
// process carries its mark; a younger one, or one still in use, stays.
func TestSweepRoomsWithoutARecord(t *testing.T) {
	b := newBox(t, UserNone, CgroupOff)
	old := time.Now().Add(-2 * sweepUnrecordedAge)
	mk := func(name string, age time.Time) string {
		d := filepath.Join(b.Root(), name)
		if err := os.MkdirAll(filepath.Join(d, "j", "work"), 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, age, age); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := mk("job-old-0123456789abcdef", old)
	young := mk("job-young-1123456789abcdef", time.Now())
	inUse := mk("job-used-2123456789abcdef", old)
	user := exec.Command("/bin/sleep", "600")
	user.Env = []string{EnvMark + "=someworker.2123456789abcdef"}
	if err := user.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = user.Process.Kill(); _ = user.Wait() })
	rep, err := b.Sweep()
	if err != nil || rep.Rooms != 1 || rep.Processes != 0 {
		t.Fatalf("sweep: %s (%v); want the stale room alone", rep, err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale room is still there (%v)", err)
	}
	for _, d := range []string{young, inUse} {
		if _, err := os.Lstat(d); err != nil {
			t.Fatalf("%s was swept: %v", d, err)
		}
	}
	if user.ProcessState != nil {
		t.Fatal("the process using a room was killed")
	}
}
