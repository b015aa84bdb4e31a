//go:build linux

package box

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sandboxBox is a box with every wall (the defaults), or the test is
// skipped (failed under BENCHFLEET_REQUIRE_BOX=1) where the host cannot
// build them.
func sandboxBox(t testing.TB, mod func(*Config)) *Box {
	t.Helper()
	needRoot(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		require(t, "needs bubblewrap (apt-get install bubblewrap)")
	}
	cfg := Config{Root: filepath.Join(place(t), "root")}
	if mod != nil {
		mod(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		require(t, "the host cannot build the sandbox: "+err.Error())
	}
	return b
}

// startIn starts argv in r with its output in a buffer; wait returns it.
func startIn(t *testing.T, r *Room, argv []string, env ...string) (wait func() (string, error)) {
	t.Helper()
	cmd := r.Cmd(argv, append([]string{"PATH=/usr/bin:/bin"}, env...))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) {
		err := r.Wait(cmd)
		return out.String(), err
	}
}

// Every wall stands on a root host with bubblewrap and cgroups.
func TestSandboxWalls(t *testing.T) {
	b := sandboxBox(t, nil)
	for _, w := range b.Walls() {
		if !w.Up {
			t.Errorf("wall %s down: %s", w.Name, w.Detail)
		}
	}
	if got := WallsSummary(b.Walls()); !strings.HasPrefix(got, "mount pid network devices uid pids memory cpu disk up") {
		t.Errorf("summary %q", got)
	}
	_, err := New(Config{Root: filepath.Join(place(t), "root2"), Bwrap: "/nonexistent/bwrap"})
	if err == nil || !strings.Contains(err.Error(), "walls down") || !strings.Contains(err.Error(), "bubblewrap") {
		t.Fatalf("no bubblewrap, walls required: %v", err)
	}
	w, err := New(Config{Root: filepath.Join(place(t), "root3"), Bwrap: "/nonexistent/bwrap", Walls: WallsWarn})
	if err != nil {
		t.Fatalf("walls: warn: %v", err)
	}
	if up := WallsSummary(w.Walls()); !strings.Contains(up, "down: mount pid network devices") {
		t.Errorf("warn box's walls: %s", up)
	}
}

// Two jobs at once cannot read, signal or write into each other: not
// their rooms, TMPDIRs, /tmp, /dev/shm or /proc; and neither can learn
// the other's room from any name it can list (/proc, /sys/fs/cgroup, the
// rooms' root).
func TestSandboxNeighbours(t *testing.T) {
	b := sandboxBox(t, nil)
	a, c := open(t, b, "a"), open(t, b, "c")
	if a.user.uid == c.user.uid {
		t.Fatalf("two jobs share uid %d", a.user.uid)
	}
	victim := script(t, `
echo secret-a > "$PWD/secret"; echo secret-a > "$TMPDIR/secret"
echo secret-a > /tmp/secret; echo secret-a > /dev/shm/secret
touch "$TMPDIR/ready"
exec sleep 30
`)
	waitA := startIn(t, a, []string{victim})
	eventually(t, 10*time.Second, "the first job's files", func() bool {
		_, err := os.Stat(filepath.Join(a.Tmp, "ready"))
		return err == nil
	})
	pids, err := processesOf(a.user.uid)
	if err != nil || len(pids) == 0 {
		t.Fatalf("the first job's processes: %v %v", pids, err)
	}
	attacker := script(t, `
leak() { echo "LEAK: $*"; }
for f in "$A_WORK/secret" "$A_TMP/secret" /tmp/secret /dev/shm/secret; do
	cat "$f" 2>/dev/null | grep -q secret-a && leak "read $f"
done
touch "$A_WORK/x" 2>/dev/null && leak "wrote the other room"
ln -s /etc/passwd "$A_WORK/.test_durations" 2>/dev/null && leak "planted a symlink in the other room"
for p in $A_PIDS; do
	kill -0 "$p" 2>/dev/null && leak "can signal $p"
	cat "/proc/$p/environ" 2>/dev/null | grep -q . && leak "read /proc/$p/environ"
	cat "/proc/$p/cmdline" 2>/dev/null | grep -q . && leak "read /proc/$p/cmdline"
done
n=$(ls /proc | grep -c '^[0-9]')
[ "$n" -gt 6 ] && leak "sees $n processes: $(ls /proc | grep '^[0-9]' | tr '\n' ' ')"
ls /sys/fs/cgroup 2>/dev/null | grep -q . && leak "lists cgroups: $(ls /sys/fs/cgroup | head -3)"
ls "$ROOT" 2>/dev/null | grep -q "$A_ROOM" && leak "lists the other room"
ls /dev | grep -q tenstorrent && leak "sees device nodes"
echo "uid=$(id -u) done"
`)
	var pidList []string
	for _, p := range pids {
		pidList = append(pidList, strconv.Itoa(p))
	}
	out, err := startIn(t, c, []string{attacker}, "A_WORK="+a.Work, "A_TMP="+a.Tmp, "A_PIDS="+strings.Join(pidList, " "), "ROOT="+b.Root(), "A_ROOM="+filepath.Base(a.Dir))()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(out, "LEAK") || !strings.Contains(out, fmt.Sprintf("uid=%d done", c.user.uid)) {
		t.Fatalf("the second job reached the first:\n%s", out)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := waitA(); err == nil {
		t.Fatal("the first job was not killed by Close")
	}
	if left, _ := processesOf(a.user.uid); len(left) > 0 {
		t.Fatalf("processes of the first job's uid left: %v", left)
	}
}

// Finding 1 of issue 31: a job that plants a symlink where the worker
// would copy a checkout file for the next job cannot reach that room, and
// the worker writes nothing there anyway: the file is bound read-only.
// Root's file stays as it was.
func TestSandboxSymlinkAttack(t *testing.T) {
	b := sandboxBox(t, nil)
	dir := place(t)
	target := filepath.Join(dir, "tt-smi")
	if err := os.WriteFile(target, []byte("#!/bin/sh\necho real tt-smi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "checkout-durations")
	if err := os.WriteFile(src, []byte(`{"payload": "of the second job"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	victim, err := b.OpenSpec(Spec{Job: "victim", Files: map[string]string{".test_durations": src}})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Remove()
	attacker := open(t, b, "attacker")
	out, _ := startIn(t, attacker, []string{script(t, `
ln -s "$TARGET" "$VICTIM/.test_durations" 2>&1 || echo "refused"
`)}, "TARGET="+target, "VICTIM="+victim.Work)()
	if !strings.Contains(out, "refused") {
		t.Fatalf("the attacker planted its symlink: %s", out)
	}
	out, err = startIn(t, victim, []string{script(t, `
cat .test_durations; echo
echo x > .test_durations 2>/dev/null && echo "wrote the checkout file"
echo done
`)})()
	if err != nil || !strings.Contains(out, "of the second job") || strings.Contains(out, "wrote") {
		t.Fatalf("the job's checkout file: %v: %s", err, out)
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != "#!/bin/sh\necho real tt-smi\n" {
		t.Fatalf("root's file changed: %q %v", got, err)
	}
}

// A fork bomb ends at the job's task limit: the job beside it still
// starts processes, and the bomb's room says it hit the limit.
func TestSandboxForkBomb(t *testing.T) {
	b := sandboxBox(t, func(c *Config) { c.Limits.Pids = 64 })
	bomb, other := open(t, b, "bomb"), open(t, b, "other")
	waitBomb := startIn(t, bomb, []string{"/usr/bin/python3", "-c", `
import os, time
end = time.time() + 3
while time.time() < end:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
`})
	out, err := startIn(t, other, []string{script(t, `for i in $(seq 50); do /bin/true || exit 1; done; echo passed`)})()
	if err != nil || !strings.Contains(out, "passed") {
		t.Fatalf("the job beside the bomb: %v: %s", err, out)
	}
	// Every process of the uid but bubblewrap's own monitor (which runs
	// nothing of the job, outside the limit) is the bomb's.
	n, _ := processesOf(bomb.user.uid)
	if len(n) > 64+1 {
		t.Fatalf("the bomb has %d processes, over its limit of 64 (and bubblewrap's monitor)", len(n))
	}
	waitBomb()
	if err := bomb.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(bomb.Hits(), HitPids) {
		t.Fatalf("hits %v, want pids", bomb.Hits())
	}
	if left, _ := processesOf(bomb.user.uid); len(left) > 0 {
		t.Fatalf("bomb processes left: %v", left)
	}
}

// From inside the box a job cannot connect to a server on the host's
// loopback (the farm's NATS, the store); with network: host it can.
func TestSandboxNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dial := []string{"/usr/bin/python3", "-c", `
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("connected")
except OSError as e:
    print("refused:", e)
`, port}
	for _, c := range []struct {
		network string
		want    string
	}{{"", "refused"}, {NetworkHost, "connected"}} {
		b := sandboxBox(t, func(cfg *Config) { cfg.Network = c.network })
		out, err := startIn(t, open(t, b, "net"), dial)()
		if err != nil || !strings.HasPrefix(out, c.want) {
			t.Fatalf("network %q: %v: %s, want %s", c.network, err, out, c.want)
		}
	}
}

// A job that fills its room fails on its own full disk, and its room
// says so; the memory limit ends a job that outgrows it.
func TestSandboxDiskAndMemory(t *testing.T) {
	b := sandboxBox(t, func(c *Config) { c.Limits.Disk = 4 << 20; c.Limits.Memory = 96 << 20 })
	r := open(t, b, "disk")
	out, err := startIn(t, r, []string{script(t, `dd if=/dev/zero of="$PWD/fill" bs=1M count=16 2>&1; exit 1`)})()
	if err == nil || !strings.Contains(out, "No space left") {
		t.Fatalf("filling the room: %v: %s", err, out)
	}
	r.Close()
	if !slices.Contains(r.Hits(), HitDisk) {
		t.Fatalf("hits %v, want disk", r.Hits())
	}
	m := open(t, b, "memory")
	out, err = startIn(t, m, []string{"/usr/bin/python3", "-c", "x = bytearray(400 << 20); print('allocated')"})()
	if err == nil || strings.Contains(out, "allocated") {
		t.Fatalf("a job over its memory: %v: %s", err, out)
	}
	m.Close()
	if !slices.Contains(m.Hits(), HitMemory) {
		t.Fatalf("hits %v, want memory", m.Hits())
	}
}

// A job sees only its slot's device nodes, not the host's others.
func TestSandboxDevices(t *testing.T) {
	b := sandboxBox(t, nil)
	devRoot := filepath.Join(place(t), "dev", "tenstorrent")
	if err := os.MkdirAll(devRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"0", "1"} {
		if err := os.WriteFile(filepath.Join(devRoot, n), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	r, err := b.OpenSpec(Spec{Job: "dev", Devices: []string{filepath.Join(devRoot, "1")}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Remove()
	out, err := startIn(t, r, []string{"/bin/ls", devRoot})()
	if err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("the job sees %q (%v), want only its board's node 1", out, err)
	}
}
