//go:build linux

package box

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// modes are the kill modes the process tests run in.
var modes = []struct{ name, cgroup string }{{"cgroup", CgroupOn}, {"fallback", CgroupOff}}

func modeOwner(t *testing.T, p string, mode fs.FileMode, uid, gid int) {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	u, g := owner(st)
	if st.Mode().Perm() != mode || u != uid || g != gid {
		t.Errorf("%s: mode %v owner %d:%d, want %v %d:%d", p, st.Mode().Perm(), u, g, mode, uid, gid)
	}
}

// A room is the worker's, with the job user's work, tmp and out in it and
// nothing else the job user can write; the job runs as nobody, without
// supplementary groups, and cannot read the worker's secrets.
func TestRoom(t *testing.T) {
	needRoot(t)
	uid, gid := nobody(t)
	b := newBox(t, "", CgroupOff)
	r := open(t, b, "job/../1")
	if want := "job-job_.._1-"; !strings.HasPrefix(filepath.Base(r.Dir), want) || filepath.Dir(r.Dir) != b.Root() {
		t.Fatalf("room %s, want %s<random> in %s", r.Dir, want, b.Root())
	}
	modeOwner(t, b.Root(), 0o711, 0, 0)
	modeOwner(t, r.Dir, 0o711, 0, 0)
	for _, d := range []string{r.Work, r.Tmp, r.Out} {
		modeOwner(t, d, 0o700, uid, gid)
	}
	modeOwner(t, filepath.Dir(r.Work), 0o711, 0, 0)
	entries, err := os.ReadDir(filepath.Dir(r.Work))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"out", "tmp", "work"}) {
		t.Fatalf("room holds %v", names)
	}

	creds := filepath.Join(filepath.Dir(filepath.Dir(r.Dir)), "creds.json")
	if err := os.WriteFile(creds, []byte(`{"secret":"hunter2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := script(t, `
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
echo "pwd=$(pwd)"
echo "tmpdir=$TMPDIR safepath=$PYTHONSAFEPATH"
cat "$CREDS" >/dev/null 2>&1 && echo "read creds"
cat /proc/$PPID/environ >/dev/null 2>&1 && echo "read the worker's environ"
for d in "$ROOM" "$ROOT" "$ROOM/.."; do
	touch "$d/x" 2>/dev/null && echo "wrote $d"
	mkdir "$d/y" 2>/dev/null && echo "made a directory in $d"
done
ls "$ROOT" >/dev/null 2>&1 && echo "listed the root"
for d in work tmp out; do touch "$ROOM/j/$d/x" && echo "wrote $d"; done
`)
	out, err := run(t, r, []string{sh}, "TMPDIR=/wrong", "PYTHONSAFEPATH=0", "CREDS="+creds, "ROOM="+r.Dir, "ROOT="+b.Root())
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := fmt.Sprintf(`uid=%d gid=%d groups=%d
pwd=%s
tmpdir=%s safepath=1
wrote work
wrote tmp
wrote out
`, uid, gid, gid, r.Work, r.Tmp)
	if out != want {
		t.Fatalf("the job printed\n%s\nwant\n%s", out, want)
	}
}

// Cmd's environment: the caller's, without its TMPDIR, PYTHONSAFEPATH or
// mark, then the room's.
func TestCmd(t *testing.T) {
	b := newBox(t, UserNone, CgroupOff)
	r := open(t, b, "env")
	cmd := r.Cmd([]string{"/bin/true"}, []string{"A=1", "TMPDIR=/x", "PYTHONSAFEPATH=", EnvMark + "=forged", "B=2"})
	want := []string{"A=1", "B=2", "TMPDIR=" + r.Tmp, "PYTHONSAFEPATH=1", EnvMark + "=" + procMark + "." + r.token}
	if !slices.Equal(cmd.Env, want) {
		t.Fatalf("env %q, want %q", cmd.Env, want)
	}
	if cmd.Dir != r.Work || !cmd.SysProcAttr.Setpgid || cmd.SysProcAttr.Pdeathsig == 0 || cmd.SysProcAttr.Credential != nil {
		t.Fatalf("cmd %+v, attr %+v", cmd, cmd.SysProcAttr)
	}
	if err := r.Start(r.Cmd(nil, nil)); err == nil || !strings.Contains(err.Error(), "empty argv") {
		t.Fatalf("empty argv: %v", err)
	}
}

// daemonScript leaves two double-forked daemons (setsid, then a background
// sleep whose parent exits) and writes their pids to out/pid and, when $1
// is "cleared", out/pid2 for one that cleared its environment (no mark).
// They let go of the job's output, which Wait waits for.
const daemonScript = `
exec >/dev/null 2>&1
setsid sh -c 'sleep 300 & echo $! > "$OUT/pid"' &
if [ "$1" = cleared ]; then
	setsid env -i /bin/sh -c 'sleep 300 & echo $! > "$1/pid2"' sh "$OUT" &
fi
wait
`

// Every process a job leaves dies at Close, double-forked daemons too, in
// both modes, as nobody and as the worker's own user.
func TestCloseKillsDaemons(t *testing.T) {
	for _, m := range modes {
		for _, u := range []string{"", UserNone} {
			t.Run(m.name+"/"+map[string]string{"": "nobody", UserNone: "none"}[u], func(t *testing.T) {
				if u == "" {
					needRoot(t)
				}
				b := newBox(t, u, m.cgroup)
				r := open(t, b, "daemons")
				// As the worker's own user without a cgroup, a daemon
				// that clears its environment escapes (see the package
				// doc): that one is not left.
				cleared := u != UserNone || m.cgroup == CgroupOn
				arg := map[bool]string{true: "cleared", false: "marked"}[cleared]
				if out, err := run(t, r, []string{script(t, daemonScript), arg}); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				pids := []int{readPid(t, filepath.Join(r.Out, "pid"))}
				if cleared {
					pids = append(pids, readPid(t, filepath.Join(r.Out, "pid2")))
				}
				for _, pid := range pids {
					if m.cgroup == CgroupOff {
						if ppid := parent(t, pid); ppid != os.Getpid() {
							t.Fatalf("daemon %d's parent is %d, not the worker (a subreaper, %d)", pid, ppid, os.Getpid())
						}
					} else if cg := cgroupOf(t, pid); !strings.HasSuffix(cg, "/"+filepath.Base(r.cgroup)) {
						t.Fatalf("daemon %d in cgroup %s, not the room's %s", pid, cg, r.cgroup)
					}
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				for _, pid := range pids {
					eventually(t, 5*time.Second, fmt.Sprintf("daemon %d to die", pid), func() bool { return dead(pid) })
				}
				if r.cgroup != "" {
					if _, err := os.Stat(r.cgroup); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("cgroup %s left: %v", r.cgroup, err)
					}
				}
			})
		}
	}
}

func parent(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p
		}
	}
	t.Fatalf("process %d in no cgroup v2: %s", pid, data)
	return ""
}

// The main process starts inside the room's cgroup (clone3
// CLONE_INTO_CGROUP), not moved there after it ran.
func TestStartsInCgroup(t *testing.T) {
	needRoot(t)
	b := newBox(t, "", CgroupOn)
	r := open(t, b, "placed")
	out, err := run(t, r, []string{"/bin/cat", "/proc/self/cgroup"})
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "0::") || !strings.HasSuffix(strings.TrimSpace(out), "/"+filepath.Base(r.cgroup)) {
		t.Fatalf("the job's cgroups:\n%s\nwant its 0:: in %s", out, r.cgroup)
	}
}

// Close while the main process runs kills it; Wait then reports it.
func TestCloseBeforeWait(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			b := newBox(t, "", m.cgroup) // nobody as root, else the worker's own user
			r := open(t, b, "abandoned")
			cmd := r.Cmd([]string{"/bin/sleep", "300"}, nil)
			if err := r.Start(cmd); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			var ee *exec.ExitError
			if err := r.Wait(cmd); !errors.As(err, &ee) || ee.String() != "signal: killed" {
				t.Fatalf("Wait after Close: %v", err)
			}
			if err := r.Start(r.Cmd([]string{"/bin/true"}, nil)); err == nil {
				t.Fatal("Start after Close succeeded")
			}
		})
	}
}

// Close removes work and tmp, keeps out (now the worker's) and the
// caller's files; Remove deletes the room.
func TestCloseRemoves(t *testing.T) {
	needRoot(t)
	b := newBox(t, "", CgroupOff)
	r, err := b.Open("tidy")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "log.txt"), []byte("log"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The job leaves files, and directories it made unreadable.
	sh := script(t, `
mkdir -p a/b tmpd && touch a/b/c "$TMPDIR/t" && chmod 000 a/b a
echo '{}' > "$OUT/report.json"
`)
	if out, err := run(t, r, []string{sh}); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, d := range []string{r.Work, r.Tmp} {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s after Close: %v", d, err)
		}
	}
	modeOwner(t, r.Out, 0o700, 0, 0)
	if data, err := ReadFile(filepath.Join(r.Out, "report.json"), 1<<10); err != nil || string(data) != "{}\n" {
		t.Fatalf("report after Close: %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "log.txt")); err != nil {
		t.Fatalf("log after Close: %v", err)
	}
	if err := r.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("room after Remove: %v", err)
	}
}

// In the fallback, a room's Close kills its orphans only: not another
// running room's main process (registered by Start; here without its mark,
// so only the registry keeps it), nor another open room's marked daemon.
func TestFallbackRoomsApart(t *testing.T) {
	needRoot(t)
	b := newBox(t, "", CgroupOff)
	a, other, c := open(t, b, "a"), open(t, b, "b"), open(t, b, "c")

	main := other.Cmd([]string{"/bin/sleep", "300"}, nil)
	main.Env = slices.DeleteFunc(main.Env, func(kv string) bool { return strings.HasPrefix(kv, EnvMark+"=") })
	if err := other.Start(main); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- other.Wait(main) }()

	sh := script(t, daemonScript)
	if out, err := run(t, c, []string{sh, "marked"}); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cDaemon := readPid(t, filepath.Join(c.Out, "pid"))
	if out, err := run(t, a, []string{sh, "cleared"}); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	aDaemons := []int{readPid(t, filepath.Join(a.Out, "pid")), readPid(t, filepath.Join(a.Out, "pid2"))}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range aDaemons {
		eventually(t, 5*time.Second, fmt.Sprintf("a's daemon %d to die", pid), func() bool { return dead(pid) })
	}
	if !alive(main.Process.Pid, "sleep") {
		t.Fatal("a's Close killed b's main process")
	}
	select {
	case err := <-waited:
		t.Fatalf("b's main process ended at a's Close: %v", err)
	default:
	}
	if !alive(cDaemon, "sleep") {
		t.Fatal("a's Close killed c's daemon")
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "c's daemon to die", func() bool { return dead(cDaemon) })
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("b's main process after b's Close: %v", err)
	}
}

// Rooms opened, run and closed at once in the fallback never take one
// another's freshly started main process for an orphan (run with -race).
func TestFallbackConcurrentRooms(t *testing.T) {
	needRoot(t)
	b := newBox(t, "", CgroupOff)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				r, err := b.Open(fmt.Sprintf("c%d-%d", g, i))
				if err != nil {
					errs <- err
					return
				}
				cmd := r.Cmd([]string{"/bin/sleep", "0.01"}, nil)
				// Without the mark: only the registry tells it apart.
				cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, EnvMark+"=") })
				if err := r.Start(cmd); err != nil {
					errs <- err
				} else if err := r.Wait(cmd); err != nil {
					errs <- fmt.Errorf("room %d-%d's main process: %w", g, i, err)
				}
				if err := r.Remove(); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
