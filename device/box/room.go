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
	// cgroup is the room's cgroup directory and cgroupFD an open
	// descriptor of it; "" and -1 without cgroups.
	cgroup   string
	cgroupFD int

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

// Open makes a fresh room for job jobID (see the package doc for its
// layout) and, with cgroups, its cgroup. jobID only names the room: any
// byte outside [A-Za-z0-9._-] becomes '_'.
func (b *Box) Open(jobID string) (*Room, error) {
	safe := pathSafe(jobID)
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
	r := &Room{
		Dir: dir, Work: filepath.Join(dir, "work"), Tmp: filepath.Join(dir, "tmp"), Out: filepath.Join(dir, "out"),
		box: b, job: jobID, token: token, cgroupFD: -1, cmds: map[*exec.Cmd]struct{}{},
	}
	if err := r.make(); err != nil {
		_ = removeTree(dir)
		return nil, fmt.Errorf("box: job %s: room: %w", jobID, err)
	}
	if b.cgroup != "" {
		if r.cgroup, r.cgroupFD, err = makeCgroup(b.cgroup, "benchfleet-job-"+safe+"-"+token); err != nil {
			_ = removeTree(dir)
			return nil, fmt.Errorf("box: job %s: cgroup: %w", jobID, err)
		}
	}
	reg.Lock()
	reg.rooms[token] = struct{}{}
	reg.Unlock()
	return r, nil
}

// make sets Dir's mode and makes the job's three directories.
func (r *Room) make() error {
	if err := os.Chmod(r.Dir, 0o711); err != nil { // past the umask
		return err
	}
	for _, d := range []string{r.Work, r.Tmp, r.Out} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
		if u := r.box.user; u.switched {
			if err := os.Lchown(d, u.uid, u.gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cmd returns the command that runs argv (argv[0] is looked up in the
// worker's PATH) in the room: working directory Work; environment env
// without any TMPDIR, PYTHONSAFEPATH or BENCHFLEET_BOX, then TMPDIR=Tmp,
// PYTHONSAFEPATH=1 (Python 3.11+ then keeps the working directory off
// sys.path) and the room's mark; the job user's uid and gid with no
// supplementary groups; a process group of its own; SIGKILL when the
// worker dies; and, with cgroups, started inside the room's cgroup. The
// caller may set its Stdin, Stdout, Stderr and ExtraFiles; run it with
// Start and Wait, not its own methods.
func (r *Room) Cmd(argv []string, env []string) *exec.Cmd {
	var cmd *exec.Cmd
	if len(argv) == 0 {
		cmd = &exec.Cmd{Err: errors.New("box: empty argv")}
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
// for an orphan. It fails once Close has begun.
func (r *Room) Start(cmd *exec.Cmd) error {
	reg.Lock()
	defer reg.Unlock()
	if r.closed {
		return fmt.Errorf("box: job %s: start after the room was closed", r.job)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("box: job %s: %w", r.job, err)
	}
	reg.mains[cmd.Process.Pid] = cmd
	r.cmds[cmd] = struct{}{}
	return nil
}

// Wait waits for cmd (started by Start) to exit, as cmd.Wait does, then
// forgets it. Call it for every command Start started, before or after
// Close. As cmd.Wait, it also waits for the copying of output to writers
// that are not an *os.File, which a daemon the job left holds open: give
// such a command a WaitDelay, or an os.Pipe of the caller's own.
func (r *Room) Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	reg.Lock()
	if cmd.Process != nil && reg.mains[cmd.Process.Pid] == cmd {
		delete(reg.mains, cmd.Process.Pid)
	}
	delete(r.cmds, cmd)
	reg.Unlock()
	return err
}

// Close kills every process the job left (its main processes too, if they
// still run: Wait then returns their end), waits for them to die, at most
// Config.KillTimeout, and removes Work and Tmp and, with cgroups, the
// room's cgroup. Out stays, made the worker's, for the caller to read;
// Remove deletes the room. Close is idempotent; Start fails after it.
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
	reg.Unlock()

	deadline := time.Now().Add(r.box.killTimeout)
	var errs []error
	if r.cgroup != "" {
		if err := killCgroup(r.cgroup, r.cgroupFD, deadline); err != nil {
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
	reg.Unlock()

	for _, d := range []string{r.Work, r.Tmp} {
		if err := removeTree(d); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: %w", r.job, err))
		}
	}
	if r.box.user.switched {
		// Later jobs of the same user must not reach the report.
		if err := os.Lchown(r.Out, r.box.worker.uid, r.box.worker.gid); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: out: %w", r.job, err))
		} else if err := os.Chmod(r.Out, 0o700); err != nil {
			errs = append(errs, fmt.Errorf("box: job %s: out: %w", r.job, err))
		}
	}
	return errors.Join(errs...)
}

// DropOut deletes Out once the caller has read what it needs from it (a
// job decides how much it writes there). Call it after Close.
func (r *Room) DropOut() error {
	if err := removeTree(r.Out); err != nil {
		return fmt.Errorf("box: job %s: %w", r.job, err)
	}
	return nil
}

// Remove closes the room if it is open and deletes it, Out and the
// caller's files in Dir included.
func (r *Room) Remove() error {
	err := r.Close()
	if rerr := removeTree(r.Dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("box: job %s: %w", r.job, rerr))
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

// pathSafe makes s a file name: bytes outside [A-Za-z0-9._-] become '_',
// at most 64 of them.
func pathSafe(s string) string {
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
