package box

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A warm room is a room opened before its job arrives, with its sandbox
// already built and in the room's cgroups. What the sandbox runs is the
// system shell, waiting to read a script on descriptor 3:
//
//	/bin/sh -c '. /dev/fd/3'
//
// The job's Start writes that script (close descriptor 3, pick where
// stderr goes, cd to the working directory, unset the shell's own
// environment, export the job's, exec its argv; every word single-quoted)
// and closes the pipe; the shell then becomes the job. So what a sandbox costs to build
// (bubblewrap's namespaces and mounts, the moves into the v1 cgroups:
// 15-25 ms a job on a hybrid host) is paid while the slot's job runs, not
// on the next job's path. The job's stdout and stderr are pipes the
// sandbox got when it was built; the worker copies them to the command's.
//
// A box keeps warm rooms per Spec (the same binds, devices and files; the
// job's name aside): once a room's job has started, warm or cold (warmAfter
// later), one more is made for its Spec, so a slot that runs job after job of one
// harness and build always finds one. A warm room is handed out only while
// every path it binds is still the one it bound (the same device and
// inode), and is dropped after warmIdle unused.

// Warm room bounds.
const (
	// warmIdle is how long a warm room waits for a job before it is
	// dropped. It saves most for short jobs, which follow each other
	// within it; a slot idle for longer pays one cold start.
	warmIdle = 30 * time.Second
	// warmPerSpec and warmMax bound the warm rooms kept (ready or being
	// made) per Spec and per box: each holds a uid, a room and two idle
	// processes.
	warmPerSpec = 4
	warmMax     = 16
	// warmAfter is how long after a job's start the next sandbox of its
	// Spec is begun: not during the job's own start (its exec and its
	// interpreter's), which building a sandbox beside it slows on a small
	// host (on 2 cores, a 50 ms python job took 9-22 ms longer than
	// unboxed with its successor's sandbox begun at its start, 4-12 ms
	// with it begun 30 ms in).
	warmAfter = 30 * time.Millisecond
)

// warmShell is what a warm sandbox runs until its job comes.
const warmShell = "/bin/sh"

// warmPool is a box's warm rooms.
type warmPool struct {
	mu     sync.Mutex
	ready  map[string][]*Room
	making map[string]int
	total  int
	// off is set after a warm room could not be made (the box then opens
	// every room cold), or by Close.
	off bool
	wg  sync.WaitGroup
}

// warmStart is a warm room's sandbox: bubblewrap, started, its shell
// waiting for the script.
type warmStart struct {
	key string
	cmd *exec.Cmd // bubblewrap
	// script is the write end of the shell's descriptor 3; out and errs
	// the read ends of its stdout (also its stderr until the script says)
	// and of its descriptor 4 (stderr, when the command's is its own).
	script, out, errs *os.File
	binds             []fileID // the bound sources, as they were when it was built
	timer             *time.Timer
	// job is the job's command once Cmd made it, started once Start
	// handed it over; copies are the copying of its output to writers
	// that are not files (Wait waits for those, as exec.Cmd's does).
	job     *exec.Cmd
	started bool
	copies  sync.WaitGroup
}

// fileID is a bound path's identity: device, inode and birth time (its
// change time where the file system keeps no birth time), for an inode
// number may be reused at once; all 0 when missing.
type fileID struct {
	path     string
	dev, ino uint64
	born     unix.StatxTimestamp
}

// key is what two jobs' sandboxes must share to use the same warm room.
func (s Spec) key() string {
	var b strings.Builder
	for _, part := range [][]string{s.ReadOnly, s.Devices} {
		for _, p := range part {
			b.WriteString(p)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	names := make([]string, 0, len(s.Files))
	for n := range s.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b.WriteString(n + "\x00" + s.Files[n] + "\x00")
	}
	return b.String()
}

// takeWarm hands out a warm room of spec's, named for spec.Job, if one is
// ready and still binds what spec names; nil otherwise.
func (b *Box) takeWarm(spec Spec) *Room {
	if !b.warmOn {
		return nil
	}
	key := spec.key()
	p := &b.warm
	for {
		p.mu.Lock()
		list := p.ready[key]
		if len(list) == 0 {
			p.mu.Unlock()
			return nil
		}
		r := list[0]
		p.ready[key] = list[1:]
		p.total--
		p.mu.Unlock()
		r.warm.timer.Stop()
		if r.warm.usable() {
			r.job = spec.Job
			r.spec.Job = spec.Job
			return r
		}
		_ = r.Remove()
	}
}

// usable reports whether the warm sandbox still runs and binds what it
// bound when it was built.
func (w *warmStart) usable() bool {
	// The shell holds the other end of script: a hang-up there means
	// the sandbox is gone.
	fds := []unix.PollFd{{Fd: int32(w.script.Fd()), Events: 0}}
	if n, err := unix.Poll(fds, 0); err != nil || n > 0 {
		return false
	}
	for _, id := range w.binds {
		if statID(id.path) != id {
			return false
		}
	}
	return true
}

// statID is path's fileID now.
func statID(path string) fileID {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_INO|unix.STATX_BTIME|unix.STATX_CTIME, &st); err != nil {
		return fileID{path: path}
	}
	id := fileID{path: path, dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, born: st.Btime}
	if st.Mask&unix.STATX_BTIME == 0 {
		id.born = st.Ctime
	}
	return id
}

// prepareWarm starts making a warm room for spec, unless the bounds are
// reached.
func (b *Box) prepareWarm(spec Spec) {
	if !b.warmOn {
		return
	}
	key := spec.key()
	p := &b.warm
	p.mu.Lock()
	if p.off || len(p.ready[key])+p.making[key] >= warmPerSpec || p.total >= warmMax {
		p.mu.Unlock()
		return
	}
	if p.ready == nil {
		p.ready, p.making = map[string][]*Room{}, map[string]int{}
	}
	p.making[key]++
	p.total++
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		r, err := b.openWarm(spec, key)
		p.mu.Lock()
		p.making[key]--
		if err != nil || p.off {
			p.total--
			if err != nil && !p.off {
				p.off = true
				b.log.Warn().Err(err).Msg("no warm rooms: every job's sandbox is built when it starts")
			}
			p.mu.Unlock()
			if r != nil {
				_ = r.Remove()
			}
			return
		}
		r.warm.timer = time.AfterFunc(warmIdle, func() { b.dropWarm(r) })
		p.ready[key] = append(p.ready[key], r)
		p.mu.Unlock()
	}()
}

// dropWarm removes r if it is still waiting for a job.
func (b *Box) dropWarm(r *Room) {
	p := &b.warm
	p.mu.Lock()
	list := p.ready[r.warm.key]
	i := slices.Index(list, r)
	if i < 0 {
		p.mu.Unlock()
		return
	}
	p.ready[r.warm.key] = slices.Delete(list, i, i+1)
	p.total--
	p.mu.Unlock()
	_ = r.Remove()
}

// lifecycle reports whether the caller closes the box (Config.Warm on):
// rooms are then tidied in the background, off the jobs' path.
func (b *Box) lifecycle() bool { return b.warmOn }

// later runs fn in the box's background tidying, after what was queued
// before it, when the box has a lifecycle and is not closed; it reports
// whether it did (else the caller runs fn itself).
func (b *Box) later(fn func() error) bool {
	if !b.lifecycle() {
		return false
	}
	t := &b.tidy
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.queue = append(t.queue, fn)
	if !t.running {
		t.running = true
		t.wg.Add(1)
		go b.tidyLoop()
	}
	return true
}

// tidyQueue is a box's background tidying: one goroutine at a time runs
// the queue in order.
type tidyQueue struct {
	mu      sync.Mutex
	queue   []func() error
	running bool
	closed  bool
	wg      sync.WaitGroup
}

func (b *Box) tidyLoop() {
	t := &b.tidy
	defer t.wg.Done()
	for {
		t.mu.Lock()
		if len(t.queue) == 0 {
			t.running = false
			t.mu.Unlock()
			return
		}
		fn := t.queue[0]
		t.queue = t.queue[1:]
		t.mu.Unlock()
		if err := fn(); err != nil {
			b.log.Warn().Err(err).Msg("tidying a finished job's room")
		}
	}
}

// Close removes the box's warm rooms and makes no more, and waits for its
// background tidying; rooms handed out are the caller's. A closed box
// still opens rooms, cold, and tidies them at once.
func (b *Box) Close() error {
	defer func() {
		b.tidy.mu.Lock()
		b.tidy.closed = true
		b.tidy.mu.Unlock()
		b.tidy.wg.Wait()
	}()
	p := &b.warm
	p.mu.Lock()
	p.off = true
	p.mu.Unlock()
	p.wg.Wait() // a room being made joins ready, or is removed
	p.mu.Lock()
	var rooms []*Room
	for _, list := range p.ready {
		rooms = append(rooms, list...)
	}
	p.ready = nil
	p.total = 0
	p.mu.Unlock()
	var errs []error
	for _, r := range rooms {
		r.warm.timer.Stop()
		errs = append(errs, r.Remove())
	}
	return errors.Join(errs...)
}

// openWarm opens a room for spec and starts its sandbox, the shell
// waiting for its script.
func (b *Box) openWarm(spec Spec, key string) (*Room, error) {
	binds := make([]fileID, 0, len(spec.ReadOnly)+len(spec.Files))
	for _, p := range spec.ReadOnly {
		binds = append(binds, statID(filepath.Clean(p)))
	}
	for _, p := range spec.Files {
		binds = append(binds, statID(p))
	}
	spec.Job = "warm"
	r, err := b.open(spec)
	if err != nil {
		return nil, err
	}
	var pipes [3][2]*os.File // script, out, errs: read end, write end
	closeAll := func() {
		for _, p := range pipes {
			for _, f := range p {
				if f != nil {
					f.Close()
				}
			}
		}
	}
	for i := range pipes {
		if pipes[i][0], pipes[i][1], err = os.Pipe(); err != nil {
			closeAll()
			_ = r.Remove()
			return nil, fmt.Errorf("box: warm room: %w", err)
		}
	}
	if u := r.user; u.switched {
		// The shell opens its script anew through /dev/fd/3, as the job
		// user: the pipe must be that user's.
		if err := unix.Fchown(int(pipes[0][0].Fd()), u.uid, u.gid); err != nil {
			closeAll()
			_ = r.Remove()
			return nil, fmt.Errorf("box: warm room: %w", err)
		}
	}
	cmd := r.Cmd([]string{warmShell, "-c", ". /dev/fd/3"}, []string{"PATH=/usr/bin:/bin"})
	cmd.Stdout, cmd.Stderr = pipes[1][1], pipes[1][1]
	cmd.ExtraFiles = []*os.File{pipes[0][0], pipes[2][1]} // 3: the script, 4: stderr
	r.warm = &warmStart{key: key, cmd: cmd, script: pipes[0][1], out: pipes[1][0], errs: pipes[2][0], binds: binds}
	err = r.startIdle(cmd)
	// The sandbox has its ends.
	for _, f := range []*os.File{pipes[0][0], pipes[1][1], pipes[2][1]} {
		f.Close()
	}
	if err != nil {
		r.closeWarm()
		r.warm = nil
		_ = r.Remove()
		return nil, fmt.Errorf("box: warm room: %w", err)
	}
	return r, nil
}

// startIdle starts the warm sandbox at the lowest CPU priority (nice 19)
// and CPU weight, so that building it takes no CPU from the jobs that run
// meanwhile; launch gives the job its own back.
func (r *Room) startIdle(cmd *exec.Cmd) error {
	if err := r.box.setCPU(r.cgroup, r.cgroups, 1); err != nil {
		return fmt.Errorf("the idle sandbox's CPU weight: %w", err)
	}
	if r.lease == nil {
		return r.Start(cmd)
	}
	// A thread's nice value is its own, and a child inherits it: this
	// thread forks the sandbox at 19, then is 0 again (root may raise
	// it), before another goroutine runs on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Setpriority(unix.PRIO_PROCESS, 0, 19); err != nil {
		return r.Start(cmd)
	}
	err := r.Start(cmd)
	if rerr := unix.Setpriority(unix.PRIO_PROCESS, 0, 0); rerr != nil {
		panic(fmt.Sprintf("box: restore this thread's priority: %v", rerr)) // cannot happen as root
	}
	return err
}

// binds reports whether dir is in every sandbox of the room: a system
// directory, or under a path the box or the room's Spec binds read-only.
func (r *Room) binds(dir string) bool {
	if underSystem(dir) {
		return true
	}
	for _, list := range [][]string{r.box.readOnly, r.spec.ReadOnly} {
		for _, p := range list {
			p = filepath.Clean(p)
			if dir == p || strings.HasPrefix(dir, p+"/") {
				return true
			}
		}
	}
	return false
}

// launchable reports whether the waiting shell can run argv with env
// as exec.Cmd would: every variable's name one the shell can export.
func launchable(argv, env []string) bool {
	if !filepath.IsAbs(argv[0]) {
		return false
	}
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !shellName(k) {
			return false
		}
	}
	return true
}

// shellName reports whether k is a name sh(1) can export.
func shellName(k string) bool {
	for i, c := range k {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return k != ""
}

// launch hands the job to the warm sandbox's shell: the script that
// makes it the job, and the copying of its output.
func (r *Room) launch(cmd *exec.Cmd) error {
	w := r.warm
	if w.started || w.script == nil {
		return errors.New("the warm room's job was started already")
	}
	if cmd.Stdin != nil {
		return errors.New("a warm room's job reads nothing on stdin")
	}
	merged := cmd.Stderr == cmd.Stdout
	var s strings.Builder
	s.WriteString("exec 3<&-\n")
	if merged {
		s.WriteString("exec 4>&-\n")
	} else {
		s.WriteString("exec 2>&4 4>&-\n")
	}
	s.WriteString("cd -- " + shellQuote(cmd.Dir) + " || exit 127\n")
	// The shell's own environment (its command's, and what cd set)
	// goes; the job's comes.
	s.WriteString("unset PWD OLDPWD")
	for _, kv := range w.cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		s.WriteString(" " + k)
	}
	s.WriteString("\n")
	for _, kv := range cmd.Env {
		s.WriteString("export " + shellQuote(kv) + "\n")
	}
	s.WriteString("exec")
	for _, a := range append([]string{cmd.Path}, cmd.Args[1:]...) {
		s.WriteString(" " + shellQuote(a))
	}
	s.WriteString("\n")
	if err := w.copyOut(w.out, cmd.Stdout); err != nil {
		return err
	}
	w.out = nil
	if !merged {
		if err := w.copyOut(w.errs, cmd.Stderr); err != nil {
			return err
		}
		w.errs = nil
	}
	if err := r.box.setCPU(r.cgroup, r.cgroups, r.box.limits.CPUWeight); err != nil {
		return fmt.Errorf("the job's CPU weight: %w", err)
	}
	if r.lease != nil {
		// The job runs at the worker's priority, not the idle one its
		// sandbox was built at.
		if err := reniceTree(w.cmd.Process.Pid); err != nil {
			return fmt.Errorf("the job's priority: %w", err)
		}
	}
	_, err := io.WriteString(w.script, s.String())
	w.script.Close()
	w.script = nil
	if err != nil {
		return fmt.Errorf("hand the job to the sandbox: %w", err)
	}
	cmd.Process = w.cmd.Process
	w.started = true
	return nil
}

// copyOut copies from (a sandbox's pipe) to to until the job and what it
// left close it. A file is written through a duplicate of its own, so
// that its owner may close it once the job started (as with exec.Cmd);
// Wait waits for the copying to other writers.
func (w *warmStart) copyOut(from *os.File, to io.Writer) error {
	if to == nil {
		to = io.Discard
	}
	if f, ok := to.(*os.File); ok {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("the job's output: %w", err)
		}
		dup := os.NewFile(uintptr(fd), f.Name())
		go func() {
			_, _ = io.Copy(dup, from)
			dup.Close()
			from.Close()
		}()
		return nil
	}
	w.copies.Add(1)
	go func() {
		defer w.copies.Done()
		_, _ = io.Copy(to, from)
		from.Close()
	}()
	return nil
}

// shellQuote is s as one word of sh(1): single-quoted.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// waitJob waits for the warm room's job (the sandbox's end), and for the
// copying of its output to writers that are not files.
func (r *Room) waitJob(cmd *exec.Cmd) error {
	err := r.Wait(r.warm.cmd)
	r.warm.copies.Wait()
	cmd.ProcessState = r.warm.cmd.ProcessState
	return err
}

// closeWarm, in Close once the room's processes are dead, closes what the
// worker holds of a warm room, and reaps its sandbox if no job ran there
// (the caller's Wait reaps it otherwise).
func (r *Room) closeWarm() {
	w := r.warm
	if w == nil {
		return
	}
	for _, f := range []**os.File{&w.script, &w.out, &w.errs} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if !w.started && w.cmd.Process != nil {
		_ = r.Wait(w.cmd)
	}
}

// reniceTree gives process root and every process under it nice 0. A
// sandbox still being set up has processes that have not switched to the
// room's uid yet (bubblewrap drops to it late), so the uid's processes are
// not the sandbox's: its process tree is. Each process is reniced before
// its children are listed, so a child forked before is listed and one
// forked after inherits 0; the walk is repeated until it finds no process
// it has not seen (one reparented meanwhile).
func reniceTree(root int) error {
	seen := map[int]bool{}
	for pass := 0; pass < 8; pass++ {
		found := false
		queue := []int{root}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if !seen[pid] {
				seen[pid], found = true, true
				if err := unix.Setpriority(unix.PRIO_PROCESS, pid, 0); err != nil && !errors.Is(err, unix.ESRCH) {
					return fmt.Errorf("renice %d: %w", pid, err)
				}
			}
			kids, err := children(pid)
			if err != nil {
				return err
			}
			for _, k := range kids {
				queue = append(queue, k.pid)
			}
		}
		if !found {
			return nil
		}
	}
	return nil
}
