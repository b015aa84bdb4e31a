//go:build linux

package box

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the test binary as a helper process when BOX_TEST_HELPER
// is set (see runHelper), as the tests themselves otherwise.
func TestMain(m *testing.M) {
	switch os.Getenv("BOX_TEST_HELPER") {
	case "":
	case "sweep":
		os.Exit(sweepHelper())
	default:
		os.Exit(runHelper())
	}
	os.Exit(m.Run())
}

// require skips the test for want, or fails it with
// BENCHFLEET_REQUIRE_BOX=1 (CI, where the box must be tested).
func require(t testing.TB, want string) {
	t.Helper()
	if os.Getenv("BENCHFLEET_REQUIRE_BOX") == "1" {
		t.Fatalf("%s (BENCHFLEET_REQUIRE_BOX=1 requires it)", want)
	}
	t.Skip(want)
}

// needRoot skips a test that switches users unless it runs as root.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		require(t, "needs root to run jobs as another user")
	}
}

// place is a fresh directory the job user can search (0711, as its parent,
// t.TempDir's own 0700 directory): rooms and scripts go under it.
func place(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// newBox is a box with a fresh Root; with cgroup "on" the test needs a
// writable cgroup v2.
func newBox(t testing.TB, userSpec, cgroup string) *Box {
	t.Helper()
	if userSpec == "" {
		userSpec = DefaultUser // these tests are of the kill modes, with one job user
	}
	b, err := New(Config{User: userSpec, Cgroup: cgroup, Root: filepath.Join(place(t), "root"), Sandbox: SandboxNone, Walls: WallsWarn})
	if err != nil && cgroup == CgroupOn {
		require(t, "needs a writable cgroup v2: "+err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Cgroups(); got != (cgroup == CgroupOn) {
		t.Fatalf("Cgroups() = %v with cgroup %q", got, cgroup)
	}
	return b
}

// open opens a room closed (and removed) at the end of the test.
func open(t testing.TB, b *Box, job string) *Room {
	t.Helper()
	r, err := b.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Remove(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// script writes an executable shell script anyone may run.
func script(t testing.TB, body string) string {
	t.Helper()
	dir := filepath.Join(place(t), "bin")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "harness.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs argv in r to its end and returns its output.
func run(t testing.TB, r *Room, argv []string, env ...string) (string, error) {
	t.Helper()
	cmd := r.Cmd(argv, append([]string{"PATH=/usr/bin:/bin", "OUT=" + r.Out}, env...))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second // a daemon holding the output fails the test
	if err := r.Start(cmd); err != nil {
		return "", err
	}
	err := r.Wait(cmd)
	return out.String(), err
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procState is process pid's state letter and command name ("" if gone).
func procState(pid int) (state, comm string) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	i, j := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if i < 0 || j < i {
		return "", ""
	}
	f := strings.Fields(string(stat[j+1:]))
	if len(f) == 0 {
		return "", ""
	}
	return f[0], string(stat[i+1 : j])
}

// alive reports whether pid is a live process named comm.
func alive(pid int, comm string) bool {
	state, c := procState(pid)
	return c == comm && state != "Z"
}

// dead reports whether pid is gone (ESRCH) or a zombie.
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	state, _ := procState(pid)
	return state == "" || state == "Z"
}

// readPid waits for the pid a job wrote to file, and for the process to
// be a running sleep (the shell forks, then execs it).
func readPid(t testing.TB, file string) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, file, func() bool {
		data, err := ReadFile(file, 64)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && alive(pid, "sleep")
	})
	return pid
}

func nobody(t testing.TB) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

func TestResolveUser(t *testing.T) {
	uid, gid := nobody(t)
	nb := fmt.Sprintf("nobody (%d:%d)", uid, gid)
	for _, tc := range []struct {
		spec       string
		euid, egid int
		switched   bool
		desc       string
		err        string
	}{
		{spec: "", desc: nb, switched: true},
		{spec: "", euid: 1000, egid: 1000, desc: descNone},
		{spec: "none", desc: descNone},
		{spec: "none", euid: 1000, egid: 1000, desc: descNone},
		{spec: "nobody", desc: nb, switched: true},
		{spec: strconv.Itoa(uid), desc: nb, switched: true},
		{spec: fmt.Sprintf("%d:4343", uid), desc: fmt.Sprintf("nobody (%d:4343)", uid), switched: true},
		{spec: "4242000:4343000", desc: "4242000:4343000", switched: true},
		{spec: "4242000", err: "give UID:GID"},
		{spec: "root", err: "is root"},
		{spec: "0", err: "is root"},
		{spec: "0:0", err: "is root"},
		{spec: "no-such-box-user", err: `"no-such-box-user"`},
		{spec: "1:2:3", err: "not a uid or gid"},
		{spec: "-1", err: `"-1"`},
		{spec: "4294967295:1", err: "not a uid or gid"},
		{spec: "nobody", euid: 1000, egid: 1000, err: `user "nobody"`},
		{spec: "1000:1000", euid: 1000, egid: 1000, desc: descNone},
		{spec: "1000:1001", euid: 1000, egid: 1000, err: "not root"},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.spec, tc.euid), func(t *testing.T) {
			got, err := resolveUser(tc.spec, tc.euid, tc.egid)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.switched != tc.switched || got.desc != tc.desc {
				t.Fatalf("got %+v, want switched %v, desc %q", got, tc.switched, tc.desc)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	base := place(t)
	if _, err := New(Config{Root: filepath.Join(base, "a"), Cgroup: "maybe"}); err == nil || !strings.Contains(err.Error(), `cgroup "maybe"`) {
		t.Fatalf("bad cgroup: %v", err)
	}
	if _, err := New(Config{Root: filepath.Join(base, "b"), KillTimeout: -time.Second}); err == nil || !strings.Contains(err.Error(), "kill timeout") {
		t.Fatalf("negative kill timeout: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Root: open, Cgroup: CgroupOff}); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("a world-writable root: %v", err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Root: file, Cgroup: CgroupOff}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a file as root: %v", err)
	}

	b, err := New(Config{Root: filepath.Join(base, "made", "root"), Cgroup: CgroupOff})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(b.Root())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o711 {
		t.Fatalf("root made %v, want 0711", st.Mode().Perm())
	}
}

func TestNewRoot(t *testing.T) {
	needRoot(t)
	uid, gid := nobody(t)
	// A root under t.TempDir's 0700 directory: nobody cannot reach it.
	hidden := filepath.Join(t.TempDir(), "root")
	_, err := New(Config{Root: hidden, Cgroup: CgroupOff})
	if err == nil || !strings.Contains(err.Error(), "not searchable by the job user") {
		t.Fatalf("a root nobody cannot reach: %v", err)
	}
	theirs := filepath.Join(place(t), "theirs")
	if err := os.Mkdir(theirs, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, uid, gid); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Root: theirs, Cgroup: CgroupOff}); err == nil || !strings.Contains(err.Error(), "not the worker") {
		t.Fatalf("a root of another user: %v", err)
	}

	b := newBox(t, "", CgroupOff)
	if got, want := b.User(), fmt.Sprintf("nobody (%d:%d)", uid, gid); got != want {
		t.Fatalf("User() = %q, want %q", got, want)
	}
	if got := newBox(t, UserNone, CgroupOff).User(); got != "none (the worker's own user)" {
		t.Fatalf("User() = %q with none", got)
	}
}

func TestCgroupDir(t *testing.T) {
	const (
		hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
		pure = `22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
		bound  = "50 40 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
		spaced = `60 40 0:26 / /mnt/cgroup\040two rw - cgroup2 cgroup2 rw` + "\n"
		v1     = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	)
	for _, tc := range []struct {
		name, mountinfo, self, want, err string
	}{
		{name: "hybrid", mountinfo: hybrid, self: "1:cpu:/\n0::/\n", want: "/sys/fs/cgroup/unified"},
		{name: "systemd", mountinfo: pure, self: "0::/system.slice/benchfleet.service\n", want: "/sys/fs/cgroup/system.slice/benchfleet.service"},
		{name: "bind-mounted subtree", mountinfo: bound, self: "0::/kubepods/pod1/worker\n", want: "/sys/fs/cgroup/worker"},
		{name: "other subtree", mountinfo: bound, self: "0::/kubepods/pod10\n", err: "no cgroup2 mount"},
		{name: "escaped", mountinfo: spaced, self: "0::/a\n", want: "/mnt/cgroup two/a"},
		{name: "outside namespace", mountinfo: pure, self: "0::/../x\n", err: "outside"},
		{name: "v1 only", mountinfo: v1, self: "1:cpu:/\n", err: "no cgroup v2"},
		{name: "no cgroup2 mount", mountinfo: v1, self: "0::/\n", err: "no cgroup2 mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cgroupDir(tc.mountinfo, tc.self)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPathSafe(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "job",
		"abc-1.2_x":             "abc-1.2_x",
		"../../etc/passwd":      ".._.._etc_passwd",
		"a b\x00c/d":            "a_b_c_d",
		strings.Repeat("x", 99): strings.Repeat("x", 64),
	} {
		if got := PathSafe(in); got != want {
			t.Errorf("PathSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// runHelper is the test binary as a worker of its own (BOX_TEST_HELPER
// set): it calls ProtectSelf if BOX_TEST_PROTECT=1, opens a room in
// BOX_TEST_ROOT for user BOX_TEST_USER and has the job read the helper's
// /proc/<pid>/environ, printing "read" if the job saw BOX_TEST_SECRET.
func runHelper() int {
	if os.Getenv("BOX_TEST_PROTECT") == "1" {
		if err := ProtectSelf(); err != nil {
			fmt.Println(err)
			return 2
		}
	}
	b, err := New(Config{User: os.Getenv("BOX_TEST_USER"), Root: os.Getenv("BOX_TEST_ROOT"), Cgroup: CgroupOff, Sandbox: SandboxNone, Walls: WallsWarn})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	r, err := b.Open("helper")
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer r.Remove()
	cmd := r.Cmd([]string{"/bin/cat", "/proc/" + strconv.Itoa(os.Getpid()) + "/environ"}, []string{"PATH=/usr/bin:/bin"})
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := r.Start(cmd); err != nil {
		fmt.Println(err)
		return 2
	}
	werr := r.Wait(cmd)
	if bytes.Contains(out.Bytes(), []byte("BOX_TEST_SECRET=hunter2")) {
		fmt.Println("read")
	} else {
		fmt.Printf("denied: %v: %s\n", werr, strings.TrimSpace(stderr.String()))
	}
	return 0
}

// A job cannot read the worker's environment once the worker called
// ProtectSelf, even as the worker's own user; without it, it can.
func TestProtectSelf(t *testing.T) {
	needRoot(t)
	uid, gid := nobody(t)
	// A copy of the test binary nobody can run, and a root nobody owns.
	base := place(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "box.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(base, "nobody-root")
	if err := os.Mkdir(theirs, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, uid, gid); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, worker, user, root, protect, want string
	}{
		{name: "own user unprotected", worker: "nobody", user: UserNone, root: theirs, protect: "0", want: "read"},
		{name: "own user protected", worker: "nobody", user: UserNone, root: theirs, protect: "1", want: "denied"},
		{name: "root worker, nobody job, protected", worker: "root", user: "", root: filepath.Join(base, "root"), protect: "1", want: "denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Dir = "/"
			cmd.Env = []string{"PATH=/usr/bin:/bin", "BOX_TEST_HELPER=protect", "BOX_TEST_SECRET=hunter2",
				"BOX_TEST_PROTECT=" + tc.protect, "BOX_TEST_USER=" + tc.user, "BOX_TEST_ROOT=" + tc.root}
			if tc.worker == "nobody" {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v: %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("the job's read of the worker's environ: %s, want %s", got, tc.want)
			}
			t.Logf("%s", bytes.TrimSpace(out))
		})
	}
}

// The probe refuses a directory that is no cgroup v2, and leaves nothing.
func TestProbeCgroupRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := probeCgroup(dir); err == nil || !strings.Contains(err.Error(), "cgroup.kill") {
		t.Fatalf("probe of a plain directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("probe left %v", entries)
	}
}

// Reachable judges what the job user could read from the mode bits along
// the path.
func TestReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs a root worker (the job user is nobody)")
	}
	dir := t.TempDir()                                         // 0700 root: nothing below is reachable
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil { // the test's own temp root
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	public, private := filepath.Join(open, "public"), filepath.Join(open, "private")
	if err := os.WriteFile(public, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(private, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
		mode os.FileMode // of dir
	}{
		{public, false, 0o700}, {public, true, 0o711}, {private, false, 0o711}, {filepath.Join(open, "missing"), false, 0o711},
	} {
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		got, err := Reachable("", tc.path)
		if err != nil || got != tc.want {
			t.Errorf("Reachable(%s) under a %v dir = %v, %v; want %v", tc.path, tc.mode, got, err, tc.want)
		}
	}
	if got, _ := Reachable(UserNone, public); got {
		t.Error("Reachable with user none: the worker's own user is not judged")
	}
}

// Config.Groups gives the job user supplementary groups (a device group
// with mode 0660, say), and only those.
func TestGroups(t *testing.T) {
	needRoot(t)
	b, err := New(Config{User: "nobody", Groups: []string{"100"}, Cgroup: CgroupOff, Root: filepath.Join(place(t), "root"), Sandbox: SandboxNone})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.User(), "group 100 (100)") {
		t.Errorf("User() = %q, want the group named", b.User())
	}
	r := open(t, b, "groups")
	cmd := r.Cmd([]string{"id", "-G"}, nil)
	var out bytes.Buffer
	cmd.Stdout, cmd.WaitDelay = &out, time.Second
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(cmd); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := strings.Fields(out.String()); len(got) != 2 || got[1] != "100" {
		t.Fatalf("id -G = %q, want the primary group and 100", out.String())
	}
	if _, err := New(Config{User: "none", Groups: []string{"100"}, Root: filepath.Join(place(t), "root")}); err == nil {
		t.Error("groups accepted without a user switch")
	}
	if _, err := New(Config{User: "nobody", Groups: []string{"0"}, Root: filepath.Join(place(t), "root")}); err == nil {
		t.Error("root's group accepted")
	}
}
