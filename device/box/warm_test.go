//go:build linux

package box

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// warmBox is a sandbox box with warm rooms, closed with the test.
func warmBox(t *testing.T, mod func(*Config)) *Box {
	t.Helper()
	b := sandboxBox(t, func(c *Config) {
		c.Warm = WarmOn
		if mod != nil {
			mod(c)
		}
	})
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// readyWarm is how many warm rooms b holds ready.
func readyWarm(b *Box) int {
	b.warm.mu.Lock()
	defer b.warm.mu.Unlock()
	n := 0
	for _, l := range b.warm.ready {
		n += len(l)
	}
	return n
}

// runIn runs argv in a room of spec's to its end: stdout, stderr and
// Wait's error.
func runIn(t *testing.T, b *Box, spec Spec, argv []string, env ...string) (r *Room, stdout, stderr string, err error) {
	t.Helper()
	r, err = b.OpenSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Remove() })
	cmd := r.Cmd(argv, env)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	err = r.Wait(cmd)
	return r, out.String(), errs.String(), err
}

// A warm room's job is the job a cold room would run: the same user,
// working directory, TMPDIR, priority (the sandbox waited at nice 19),
// environment (every byte of it), arguments, separate stdout and stderr,
// and exit code; and it is inside the room's limits.
func TestWarmRoomRunsTheJob(t *testing.T) {
	b := warmBox(t, func(c *Config) { c.Limits.Pids = 32 })
	job := script(t, `
echo "uid=$(id -u) pwd=$PWD tmp=$TMPDIR nice=$(nice)"
printf 'tricky=[%s]\n' "$TRICKY"
for a in "$@"; do printf 'arg=[%s]\n' "$a"; done
env | grep -c . | sed 's/^/vars=/'
echo to-stderr >&2
exit 7
`)
	spec := Spec{Job: "j", ReadOnly: []string{filepath.Dir(job)}}
	tricky := "it's \"quoted\" $HOME `x` \\ \n second line; ' '' '"
	args := []string{job, "a b", "it's", "$(touch /tmp/x)", "-n", ""}
	env := []string{"PATH=/usr/bin:/bin", "TRICKY=" + tricky}

	cold, coldOut, coldErr, err := runIn(t, b, spec, args, env...)
	if cold.warm != nil {
		t.Fatal("the first room came warm")
	}
	if code, _ := cold.ExitStatus(err); code != 7 {
		t.Fatalf("cold: exit %v (code %d): %s %s", err, code, coldOut, coldErr)
	}
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 0 })
	warm, out, errs, err := runIn(t, b, spec, args, env...)
	if warm.warm == nil {
		t.Fatal("the second room of the same spec came cold")
	}
	if code, sig := warm.ExitStatus(err); code != 7 || sig != 0 {
		t.Fatalf("warm: exit %v (code %d, signal %v): %s %s", err, code, sig, out, errs)
	}
	if errs != "to-stderr\n" || strings.Contains(out, "to-stderr") {
		t.Errorf("warm stderr %q, stdout %q", errs, out)
	}
	want := strings.NewReplacer(cold.Work, "WORK", cold.Tmp, "TMP", strconv.Itoa(cold.user.uid), "UID").Replace(coldOut)
	got := strings.NewReplacer(warm.Work, "WORK", warm.Tmp, "TMP", strconv.Itoa(warm.user.uid), "UID").Replace(out)
	if got != want || !strings.Contains(got, "uid=UID pwd=WORK tmp=TMP nice=0") || !strings.Contains(got, "tricky=["+tricky+"]") {
		t.Fatalf("warm job's view differs from the cold one's:\nwarm:\n%s\ncold:\n%s", got, want)
	}
	if warm.user.uid == cold.user.uid {
		t.Errorf("two rooms share uid %d", warm.user.uid)
	}

	// A variable the shell cannot export: the warm room's sandbox is
	// passed over, and the job runs in a sandbox of its own, as cold.
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 0 })
	r, out, _, err := runIn(t, b, spec, []string{"/usr/bin/env"}, "DOTTED.NAME=1")
	if err != nil || r.warm == nil || r.warm.started || !strings.Contains(out, "DOTTED.NAME=1") {
		t.Fatalf("env with a dotted name: %v, warm room %v: %q", err, r.warm != nil, out)
	}

	// Inside the room's pids limit: a warm room's job hits it.
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 0 })
	bomb := script(t, `for i in $(seq 64); do sleep 5 & done 2>/dev/null; wait; echo done`)
	r, _, _, _ = runIn(t, b, Spec{Job: "bomb", ReadOnly: []string{filepath.Dir(bomb)}}, []string{bomb}, env...)
	if r.warm != nil {
		t.Fatal("a room of another spec came warm")
	}
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 1 })
	r, _, _, _ = runIn(t, b, Spec{Job: "bomb", ReadOnly: []string{filepath.Dir(bomb)}}, []string{bomb}, env...)
	if r.warm == nil {
		t.Fatal("the bomb's second room came cold")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Hits(), HitPids) {
		t.Fatalf("a warm room's job went past its pids limit: hits %v", r.Hits())
	}
}

// A warm room is handed out only while what it binds is what the job's
// spec names: a directory replaced since (a new build at the same path)
// gets a cold room that sees the new one.
func TestWarmRoomStaleBind(t *testing.T) {
	b := warmBox(t, nil)
	dir := filepath.Join(place(t), "env")
	write := func(v string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "version"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	spec := Spec{Job: "j", ReadOnly: []string{dir}}
	argv := []string{"/bin/cat", filepath.Join(dir, "version")}
	if _, out, _, err := runIn(t, b, spec, argv); err != nil || out != "one" {
		t.Fatalf("first job: %q %v", out, err)
	}
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 0 })
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	write("two")
	r, out, _, err := runIn(t, b, spec, argv)
	if err != nil || out != "two" {
		t.Fatalf("after the directory was replaced: %q %v", out, err)
	}
	if r.warm != nil {
		t.Fatal("a warm room that binds the old directory was handed out")
	}
}

// Signal reaches a warm room's job (not the sandbox's own processes),
// and Close takes what is left; Box.Close leaves no warm room, process
// or uid behind.
func TestWarmRoomSignalAndClose(t *testing.T) {
	b := warmBox(t, nil)
	job := script(t, `trap 'echo got-term; exit 3' TERM; touch "$TMPDIR/ready"; while :; do sleep 0.1; done`)
	spec := Spec{Job: "j", ReadOnly: []string{filepath.Dir(job)}}
	if _, _, _, err := runIn(t, b, Spec{Job: "first", ReadOnly: spec.ReadOnly}, []string{"/bin/true"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 0 })
	r, err := b.OpenSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.warm == nil {
		t.Fatal("cold room")
	}
	cmd := r.Cmd([]string{job}, []string{"PATH=/usr/bin:/bin"})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job's start", func() bool {
		_, err := os.Stat(filepath.Join(r.Tmp, "ready"))
		return err == nil
	})
	r.Signal(syscall.SIGTERM)
	err = r.Wait(cmd)
	if code, _ := r.ExitStatus(err); code != 3 || !strings.Contains(out.String(), "got-term") {
		t.Fatalf("after SIGTERM: %v (code %d): %s", err, code, out.String())
	}
	uid := r.user.uid
	if err := r.Remove(); err != nil {
		t.Fatal(err)
	}
	if left, _ := processesOf(uid); len(left) > 0 {
		t.Fatalf("processes of the job's uid left: %v", left)
	}
	// The next warm room waits; Close removes it.
	eventually(t, 10*time.Second, "a warm room", func() bool { return readyWarm(b) > 0 })
	var warmUIDs []int
	b.warm.mu.Lock()
	for _, l := range b.warm.ready {
		for _, w := range l {
			warmUIDs = append(warmUIDs, w.user.uid)
		}
	}
	b.warm.mu.Unlock()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, uid := range warmUIDs {
		if left, _ := processesOf(uid); len(left) > 0 {
			t.Fatalf("a closed box's warm room left processes of uid %d: %v", uid, left)
		}
	}
	ents, err := os.ReadDir(b.Root())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "job-warm-") {
			t.Fatalf("a closed box left a warm room: %v", ents)
		}
	}
	// A closed box still opens rooms, cold.
	if r, _, _, err := runIn(t, b, spec, []string{"/bin/true"}); err != nil || r.warm != nil {
		t.Fatalf("after Close: %v, warm %v", err, r.warm != nil)
	}
	time.Sleep(100 * time.Millisecond)
	if n := readyWarm(b); n > 0 {
		t.Fatalf("a closed box made %d warm rooms", n)
	}
}

// No job's sandbox binds the rooms' directory or a directory above it
// (a harness environment that holds the rooms): bound, it shows the
// rooms' directory, and bubblewrap's read-only pass over its mounts
// races with other rooms' tmpfs coming and going.
func TestRoomsOutOfSight(t *testing.T) {
	top := place(t)
	root := filepath.Join(top, "env", "rooms")
	if err := os.MkdirAll(filepath.Join(top, "env"), 0o711); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Root: root, ReadOnly: []string{filepath.Join(top, "env")}}); err == nil || !strings.Contains(err.Error(), "holds the rooms") {
		t.Fatalf("a read-only path above Root: %v", err)
	}
	b, err := New(Config{Root: root, Sandbox: SandboxNone, Walls: WallsWarn})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(top, "env"), root, "/"} {
		if _, err := b.OpenSpec(Spec{Job: "j", ReadOnly: []string{p}}); err == nil || !strings.Contains(err.Error(), "holds the rooms") {
			t.Errorf("a job binding %s: %v", p, err)
		}
	}
	r, err := b.OpenSpec(Spec{Job: "j", ReadOnly: []string{filepath.Join(top, "env2"), filepath.Join(top, "env", "room")}})
	if err != nil {
		t.Fatalf("paths beside the rooms: %v", err)
	}
	_ = r.Remove()
}
