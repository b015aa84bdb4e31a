package box

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Room is one job's directories, and its cgroup when the box has them.
// Run the job with Cmd, Start and Wait; Close kills what it left.
type Room struct {
	// Dir is the room, job-<id>-<random> under Root: the worker's (0711),
	// not writable by the job. The caller's own files (log.txt) go here.
	Dir string
	// Work is the job's working directory, Dir/work (the job user's, 0700).
	Work string
	// Tmp is the job's TMPDIR, Dir/tmp (the job user's, 0700).
	Tmp string
	// Out is where the job writes its report, Dir/out (the job user's,
	// 0700 while the job runs; the worker's, 0700, after Close). Read what
	// it holds with ReadFile or CopyFile.
	Out string

	box   *Box
	job   string
	token string
	// user is the job's user: the box's, or a uid leased for this room.
	user  ident
	lease *uidLease
	// cgroup is the room's cgroup directory and cgroupFD an open
	// descriptor of it; "" and -1 without cgroups. cgroups are its
	// limits' cgroups (v1, on a hybrid host); hits what it ran into.
	cgroup   string
	cgroupFD int
	cgroups  jobCgroups
	hits     []Hit
	// warm is the room's sandbox when it was built before its job (a
	// warm room, see warm_linux.go); nil otherwise.
	warm *warmStart
	// prepared is set once the room asked for a warm room for the next
	// job of its Spec.
	prepared bool
	// mounted is whether the room's tmpfs (Dir/j) is mounted.
	mounted bool
	// hold is the room's locked record (sweep_linux.go), held until Remove.
	hold *roomHold
	spec Spec
	// sandboxed are the commands Cmd wrapped in bwrap; their box pipes.
	sandboxed map[*exec.Cmd]*handshake

	// Guarded by reg: whether Close has begun, and the commands Start ran
	// that Wait has not returned for.
	closed bool
	cmds   map[*exec.Cmd]struct{}

	closeOnce sync.Once
	closeErr  error
}

// reg is the process's registry of running jobs: the subreaper fallback
// kills the worker's children, and must never take one that is the main
// process of a running room, or another open room's orphan. Its lock is
// held from cmd.Start until the pid is registered, and during every scan
// of the worker's children.
var reg = struct {
	sync.Mutex
	// mains are the processes Room.Start started that Room.Wait has not
	// reaped, by pid.
	mains map[int]*exec.Cmd
	// rooms are the tokens of the open rooms.
	rooms map[string]struct{}
}{mains: map[int]*exec.Cmd{}, rooms: map[string]struct{}{}}

// procMark tells this process's room marks from those of other workers.
var procMark = randomToken()

// Spec is what one job's sandbox holds besides the system directories
// and the box's Config.ReadOnly paths.
type Spec struct {
	// Job names the room: any byte outside [A-Za-z0-9._-] becomes '_'.
	Job string
	// ReadOnly are host paths bound read-only at the same path (the
	// checkout, the harness's environment, the job's wheels). Missing
	// ones are skipped.
	ReadOnly []string
	// Devices are device nodes bound, with device access, at the same
	// path (the slot's /dev/tenstorrent/<N>). No other device node of
	// the host is in the sandbox.
	Devices []string
	// Files are host files bound read-only into Work, by their path
	// relative to Work (a checkout's .test_durations): in place before
	// the job's first process starts, and never written by the worker.
	Files map[string]string
}

// Open makes a fresh room for job jobID: Open(Spec{Job: jobID}).
func (b *Box) Open(jobID string) (*Room, error) { return b.OpenSpec(Spec{Job: jobID}) }

// OpenSpec makes a fresh room for a job (see the package doc for its
// layout): a uid leased for it when the box has a range, its tmpfs, its
// cgroups with their limits.
//
// With a sandbox, a room whose Spec (its job aside) an earlier room had
// may come warm: its sandbox already built, the job's command handed to
// it at Start (see warm_linux.go).
func (b *Box) OpenSpec(spec Spec) (*Room, error) {
	if r := b.takeWarm(spec); r != nil {
		return r, nil
	}
	return b.open(spec)
}

// open makes a fresh room for spec (cold).
func (b *Box) open(spec Spec) (*Room, error) {
	jobID := spec.Job
	if err := b.besideRooms(spec.ReadOnly, "read-only path"); err != nil {
		return nil, fmt.Errorf("box: job %s: %w", jobID, err)
	}
	safe := PathSafe(jobID)
	token := randomToken()
	dir := filepath.Join(b.root, "job-"+safe+"-"+token)
	err := os.Mkdir(dir, 0o711)
	if errors.Is(err, fs.ErrNotExist) {
		// Root was removed under a long-running worker (a tmp cleaner).
		if _, err = makeRoot(b.root, b.worker, b.user); err == nil {
			err = os.Mkdir(dir, 0o711)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("box: job %s: room: %w", jobID, err)
	}
	jdir := filepath.Join(dir, "j")
	r := &Room{
		Dir: dir, Work: filepath.Join(jdir, "work"), Tmp: filepath.Join(jdir, "tmp"), Out: filepath.Join(jdir, "out"),
		box: b, job: jobID, token: token, user: b.user, cgroupFD: -1, cmds: map[*exec.Cmd]struct{}{},
		spec: spec, sandboxed: map[*exec.Cmd]*handshake{},
	}
	fail := func(what string, err error) (*Room, error) {
		r.lease.release(false)
		_ = RemoveRoom(dir)
		r.hold.release()
		return nil, fmt.Errorf("box: job %s: %s: %w", jobID, what, err)
	}
	if r.hold, err = holdRoom(dir); err != nil {
		return fail("room", err)
	}
	if b.uids != nil {
		if r.lease, err = b.uids.lease(); err != nil {
			return fail("user", err)
		}
		r.user.uid, r.user.gid, r.user.name = r.lease.uid, r.lease.uid, ""
		r.user.desc = fmt.Sprintf("uid %d", r.lease.uid)
	}
	if err := r.make(); err != nil {
		return fail("room", err)
	}
	// Cgroup names are listable by every job (/sys/fs/cgroup): they hold
	// no part of the room's name.
	cgName := "benchfleet-job-" + randomToken()
	if err := r.note(cgName); err != nil {
		return fail("room", err)
	}
	if b.cgroup != "" {
		if r.cgroup, r.cgroupFD, err = makeCgroup(b.cgroup, cgName); err != nil {
			return fail("cgroup", err)
		}
	}
	if r.cgroups, err = b.setLimits(r.cgroup, cgName); err != nil {
		if r.cgroup != "" {
			_ = killCgroup(r.cgroup, r.cgroupFD, time.Now().Add(b.killTimeout))
		}
		return fail("limits", err)
	}
	reg.Lock()
	reg.rooms[token] = struct{}{}
	reg.Unlock()
	return r, nil
}

// make sets Dir's mode, mounts the room's tmpfs at Dir/j (a root worker
// with a disk bound) and makes the job's three directories.
func (r *Room) make() error {
	if err := os.Chmod(r.Dir, 0o711); err != nil { // past the umask
		return err
	}
	jdir := filepath.Dir(r.Work)
	if err := os.Mkdir(jdir, 0o711); err != nil {
		return err
	}
	if r.box.diskBound() {
		if err := mountRoom(jdir, r.box.limits.Disk); err != nil {
			return err
		}
		r.mounted = true
	}
	for _, d := range []string{r.Work, r.Tmp, r.Out} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
		if d == r.Work && r.box.sandbox == "" {
			// Without a sandbox to bind them, the checkout files are
			// copied in while the directory is still the worker's.
			if err := r.copyFiles(); err != nil {
				return err
			}
		}
		if u := r.user; u.switched {
			if err := os.Lchown(d, u.uid, u.gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyFiles copies Spec.Files into Work (readable, not writable, by the
// job), for a box without a sandbox. A missing source is skipped.
func (r *Room) copyFiles() error {
	for name, src := range r.spec.Files {
		data, err := ReadFile(src, maxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(r.Work, filepath.Clean("/"+name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxFileBytes bounds a Spec.Files file copied without a sandbox.
const maxFileBytes = 16 << 20

// Hits are the limits the room's processes ran into (known once Close
// has run): a job that failed and hit one failed by its own doing.
func (r *Room) Hits() []Hit {
	reg.Lock()
	defer reg.Unlock()
	return append([]Hit(nil), r.hits...)
}

// UserName is the name the job's USER and LOGNAME say: its user's passwd
// name, or "job-<uid>" for a uid of its own (which has no passwd entry);
// "" when it runs as the worker's own user.
func (r *Room) UserName() string {
	switch {
	case r.lease != nil:
		return fmt.Sprintf("job-%d", r.lease.uid)
	case r.user.switched:
		return r.user.name
	}
	return ""
}

// User is the room's job user ("uid 2147352576", "nobody (65534:65534)").
func (r *Room) User() string { return r.user.desc }

// Cmd returns the command that runs argv (argv[0] is looked up in the
// worker's PATH) in the room: working directory Work; environment env
// without any TMPDIR, PYTHONSAFEPATH or BENCHFLEET_BOX, then TMPDIR=Tmp,
// PYTHONSAFEPATH=1 (Python 3.11+ then keeps the working directory off
// sys.path) and the room's mark; the job user's uid and gid with no
// supplementary groups but Config.Groups; a process group of its own;
// SIGKILL when the worker dies; with cgroups, started inside the room's
// cgroup; and with the sandbox, inside bubblewrap's walls (see the package
// doc). The caller may set its Stdin, Stdout and Stderr; run it with
// Start and Wait, not its own methods.
//
// In a warm room, the first command whose program the sandbox binds is
// the one its waiting sandbox runs (see warm_linux.go): it reads nothing
// on stdin.
func (r *Room) Cmd(argv []string, env []string) *exec.Cmd {
	var cmd *exec.Cmd
	if len(argv) == 0 {
		cmd = &exec.Cmd{Err: errors.New("box: empty argv")}
	} else if r.box.sandbox != "" {
		prog := argv[0]
		if p, err := exec.LookPath(prog); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				prog = abs
			}
		}
		argv = append([]string{prog}, argv[1:]...)
		if r.warm != nil && r.warm.job == nil && r.binds(filepath.Dir(prog)) && launchable(argv, env) {
			cmd = &exec.Cmd{Path: prog, Args: argv}
			r.warm.job = cmd
		} else {
			cmd = exec.Command(r.box.sandbox, r.bwrapArgs(argv)...)
			r.sandboxed[cmd] = nil
		}
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Dir = r.Work
	cmd.Env = make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "TMPDIR" && k != "PYTHONSAFEPATH" && k != EnvMark {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+r.Tmp, "PYTHONSAFEPATH=1", EnvMark+"="+procMark+"."+r.token)
	cmd.SysProcAttr = r.sysProcAttr()
	return cmd
}

// Start starts cmd (from Cmd) and registers it as a main process of the
// room until Wait returns for it, so that no other room's Close takes it
// for an orphan. A sandboxed command's job process is held until it is
// in every cgroup of the room. It fails once Close has begun.
func (r *Room) Start(cmd *exec.Cmd) error {
	reg.Lock()
	defer reg.Unlock()
	if r.closed {
		return fmt.Errorf("box: job %s: start after the room was closed", r.job)
	}
	if r.warm != nil && cmd == r.warm.job {
		if err := r.launch(cmd); err != nil {
			return fmt.Errorf("box: job %s: warm sandbox: %w", r.job, err)
		}
		r.prepareNext()
		return nil
	}
	_, sandboxed := r.sandboxed[cmd]
	var hs *handshake
	if sandboxed {
		var err error
		if hs, err = newHandshake(cmd); err != nil {
			return fmt.Errorf("box: job %s: %w", r.job, err)
		}
	}
	if err := cmd.Start(); err != nil {
		hs.close()
		return fmt.Errorf("box: job %s: %w", r.job, err)
	}
	reg.mains[cmd.Process.Pid] = cmd
	r.cmds[cmd] = struct{}{}
	if hs != nil {
		r.sandboxed[cmd] = hs
		if err := hs.release(cmd.Process.Pid, r.cgroups); err != nil {
			_ = cmd.Process.Kill()
			return fmt.Errorf("box: job %s: sandbox: %w", r.job, err)
		}
		if r.warm == nil || cmd != r.warm.cmd {
			r.prepareNext()
		}
	}
	return nil
}

// prepareNext starts the making of a warm room for the next job of the
// room's Spec, once per room, warmAfter after its job started.
func (r *Room) prepareNext() {
	if !r.prepared && r.box.warmOn {
		r.prepared = true
		spec := r.spec
		time.AfterFunc(warmAfter, func() { r.box.prepareWarm(spec) })
	}
}

// Wait waits for cmd (started by Start) to exit, as cmd.Wait does, then
// forgets it. Call it for every command Start started, before or after
// Close. As cmd.Wait, it also waits for the copying of output to writers
// that are not an *os.File, which a daemon the job left holds open: give
// such a command a WaitDelay, or an os.Pipe of the caller's own.
func (r *Room) Wait(cmd *exec.Cmd) error {
	if r.warm != nil && cmd == r.warm.job {
		return r.waitJob(cmd)
	}
	err := cmd.Wait()
	reg.Lock()
	if cmd.Process != nil && reg.mains[cmd.Process.Pid] == cmd {
		delete(reg.mains, cmd.Process.Pid)
	}
	delete(r.cmds, cmd)
	reg.Unlock()
	return err
}

// Signal sends sig to every process of the job but the sandbox's own
// (bubblewrap's monitor and its pid 1 stay, to report the job's end):
// with a uid of the room's own, every process of that uid; otherwise the
// process group of each command Start started.
func (r *Room) Signal(sig syscall.Signal) {
	reg.Lock()
	keep := map[int]bool{}
	var groups []int
	for cmd := range r.cmds {
		keep[cmd.Process.Pid] = true
		groups = append(groups, cmd.Process.Pid)
		if hs := r.sandboxed[cmd]; hs != nil && hs.child > 0 {
			keep[hs.child] = true
		}
	}
	reg.Unlock()
	if r.lease != nil {
		signalUID(r.lease.uid, sig, keep)
		return
	}
	for _, pgid := range groups {
		_ = syscall.Kill(-pgid, sig)
	}
}

// ExitStatus is how the job's main process ended, from Wait's error: its
// exit code (-1 if none) and the signal that ended it (0 if none). A
// sandboxed job's is what bubblewrap reports: a job killed by signal N
// exits 128+N there, read back as signal N.
func (r *Room) ExitStatus(err error) (code int, sig syscall.Signal) {
	if err == nil {
		return 0, 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1, 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	code = ee.ExitCode()
	if r.box.sandbox != "" && code > 128 && code <= 128+64 {
		return -1, syscall.Signal(code - 128)
	}
	return code, 0
}

// Close kills every process the job left (its main processes too, if they
// still run: Wait then returns their end), waits for them to die, at most
// Config.KillTimeout, and removes Work and Tmp and the room's cgroups,
// noting first which limits the job hit (Hits). Out stays, made the
// worker's, for the caller to read; Remove deletes the room. Close is
// idempotent; Start fails after it.
func (r *Room) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *Room) close() error {
	reg.Lock()
	r.closed = true
	for cmd := range r.cmds {
		_ = cmd.Process.Kill() // by pidfd: never another process
	}
	for _, hs := range r.sandboxed {
		hs.close()
	}
	reg.Unlock()

	deadline := time.Now().Add(r.box.killTimeout)
	var errs []error
	hits := r.cgroups.hits(r.cgroup)
	if r.mounted && roomFull(filepath.Dir(r.Work)) {
		hits = append(hits, HitDisk)
	}
	if r.cgroup != "" {
		if err := emptyCgroup(r.cgroup, r.cgroupFD, deadline); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
		}
	}
	if r.lease != nil && r.cgroup == "" {
		// Without a cgroup, the uid finds them (with one, every process
		// of the job was in it, and is dead).
		if err := killUID(r.lease.uid); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
		}
	}
	// Orphans come to the worker in the fallback, and also with cgroups
	// when it is pid 1 or a subreaper anyway: dead or alive, they are
	// reaped here.
	if r.cgroup == "" || reapsOrphans() {
		if err := r.reapOrphans(deadline); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
		}
	}
	reg.Lock()
	delete(reg.rooms, r.token)
	r.hits = hits
	reg.Unlock()
	if r.user.switched {
		// Later jobs of the same user must not reach the report.
		if err := os.Lchown(r.Out, r.box.worker.uid, r.box.worker.gid); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: out: %w", r.job, err))
		} else if err := os.Chmod(r.Out, 0o700); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: out: %w", r.job, err))
		}
	}
	r.closeWarm()
	killed := len(errs) == 0
	// The job's processes are dead and Out is the worker's: what is left
	// (its cgroups, Work and Tmp, the uid's lease) is tidying, which a box
	// with a lifecycle does off the job's path.
	tidy := func() error {
		var errs []error
		deadline := time.Now().Add(r.box.killTimeout)
		if r.cgroup != "" && killed {
			if err := removeCgroup(r.cgroup, deadline); err != nil {
				errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
			}
		}
		if err := r.cgroups.remove(deadline); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
		}
		for _, d := range []string{r.Work, r.Tmp} {
			if err := removeTree(d); err != nil {
				errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
			}
		}
		// No process of the uid is left: another job may have it. After
		// an error, the next lease of the uid sweeps it first.
		r.lease.release(killed && len(errs) == 0)
		return errors.Join(errs...)
	}
	if r.box.later(tidy) {
		return errors.Join(errs...)
	}
	if err := tidy(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DropOut deletes Out once the caller has read what it needs from it (a
// job decides how much it writes there). Call it after Close. A box with
// a lifecycle leaves it to Remove.
func (r *Room) DropOut() error {
	if r.box.lifecycle() {
		return nil
	}
	if err := removeTree(r.Out); err != nil {
		return fmt.Errorf("box: job %s: %w", r.job, err)
	}
	if r.mounted {
		if err := unmountRoom(filepath.Dir(r.Work)); err != nil {
			return fmt.Errorf("box: job %s: %w", r.job, err)
		}
		r.mounted = false
	}
	return nil
}

// Remove closes the room if it is open and deletes it, Out and the
// caller's files in Dir included; a box with a lifecycle deletes it in
// the background (Box.Close waits for that).
func (r *Room) Remove() error {
	err := r.Close()
	remove := func() error {
		// The record stays locked until the room is gone: a worker that
		// starts meanwhile sweeps no room this one still tidies.
		defer r.hold.release()
		if err := RemoveRoom(r.Dir); err != nil {
			return fmt.Errorf("box: job %s: %w", r.job, err)
		}
		return nil
	}
	if !r.box.later(remove) {
		err = errors.Join(err, remove())
	}
	return err
}

// removeTree removes dir and what it holds, even directories the job made
// unreadable or unwritable to their owner (a worker that is not root runs
// jobs as itself). A root worker needs no such help, and must not chmod
// what a process of the job user could swap for a symlink meanwhile
// (chmod follows it): it only retries the removal.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || os.Geteuid() == 0 {
		return err
	}
	// WalkDir visits a directory before it reads it: made 0700 first, it
	// can be read and emptied.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// besideRooms checks that no path of paths is Root or above it: bound
// into a sandbox, it would show the rooms' directory, and bubblewrap's
// read-only pass over its mounts races with the rooms' own tmpfs coming
// and going (a sandbox then fails to start).
func (b *Box) besideRooms(paths []string, what string) error {
	for _, p := range paths {
		p = filepath.Clean(p)
		if b.root == p || strings.HasPrefix(b.root, strings.TrimSuffix(p, "/")+"/") {
			return fmt.Errorf("%s %s holds the rooms (%s): keep the rooms' directory out of what jobs see", what, p, b.root)
		}
	}
	return nil
}

// PathSafe makes s a file name: bytes outside [A-Za-z0-9._-] become '_',
// at most 64 of them.
func PathSafe(s string) string {
	if s == "" {
		return "job"
	}
	b := []byte(s)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// randomToken is 64 random bits in hex.
func randomToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
