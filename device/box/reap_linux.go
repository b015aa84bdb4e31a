package box

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ProtectSelf makes the calling process non-dumpable (prctl
// PR_SET_DUMPABLE 0): its /proc entries (environ, maps, fd/, mem) become
// root's, so jobs running as the worker's own user cannot read its
// environment, and it writes no core dumps. The worker calls it once at
// start.
func ProtectSelf() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("box: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// sysProcAttr is how the room's processes start (see Cmd).
func (r *Room) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if u := r.user; u.switched {
		// NoSetGroups false: setgroups() with exactly Config.Groups (none
		// by default).
		a.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: append([]uint32{}, u.groups...)}
	}
	if r.cgroupFD >= 0 {
		a.UseCgroupFD = true
		a.CgroupFD = r.cgroupFD
	}
	return a
}

// becomeSubreaper makes the worker the reaper of its descendants' orphans.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// reapsOrphans reports whether orphaned descendants are re-parented to
// this process: it is a subreaper, or pid 1.
func reapsOrphans() bool {
	if os.Getpid() == 1 {
		return true
	}
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
}

// reapOrphans kills and reaps the room's processes among the worker's
// children until a scan finds none, or deadline.
func (r *Room) reapOrphans(deadline time.Time) error {
	self := os.Getpid()
	killed := map[int]bool{}
	delay := time.Millisecond
	for {
		seen, err := r.reapPass(self, killed)
		if err != nil {
			return err
		}
		if seen == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of the job's processes still alive %s after SIGKILL", seen, r.box.killTimeout)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// reapPass sends SIGKILL to every child of the worker that is the room's
// (see owns; killed are the ones sent it before) and reaps those that died.
// It returns how many it found: a pass after one that found some looks for
// their children, re-parented to the worker as they died.
func (r *Room) reapPass(self int, killed map[int]bool) (int, error) {
	reg.Lock()
	defer reg.Unlock()
	kids, err := children(self)
	if err != nil {
		return 0, err
	}
	seen := 0
	for _, c := range kids {
		if _, main := reg.mains[c.pid]; main {
			continue // os/exec waits for it
		}
		if !killed[c.pid] && !r.owns(c) {
			continue
		}
		seen++
		// c is the worker's child and not reaped (only this scan reaps
		// it, under reg): its pid cannot have been reused.
		_ = unix.Kill(c.pid, unix.SIGKILL)
		killed[c.pid] = true
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(c.pid, &ws, unix.WNOHANG, nil); pid == c.pid || errors.Is(err, unix.ECHILD) {
			delete(killed, c.pid)
		}
	}
	return seen, nil
}

// owns reports whether child c of the worker is the room's to kill: it
// carries the room's mark, or a mark of this process's rooms that are
// closed; or, unmarked, it runs as the job user the box switches to. One
// marked as another open room's is not.
func (r *Room) owns(c child) bool {
	if mark, ok := readMark(c.pid); ok {
		if tok, ok := bytes.CutPrefix(mark, []byte(procMark+".")); ok {
			if string(tok) == r.token {
				return true
			}
			_, open := reg.rooms[string(tok)]
			return !open
		}
	}
	u := r.user
	if !u.switched {
		return false
	}
	for _, id := range c.uids {
		if id == u.uid {
			return true
		}
	}
	return false
}

// child is a child process of the worker.
type child struct {
	pid int
	// uids are its real, effective, saved and file-system uids.
	uids [4]int
}

// children lists the children of process ppid, zombies included: from
// the children lists of its threads (/proc/<ppid>/task/*/children), or
// where the kernel keeps none, by a scan of /proc.
func children(ppid int) ([]child, error) {
	if kids, ok := threadChildren(ppid); ok {
		return kids, nil
	}
	pids, err := allPids()
	if err != nil {
		return nil, err
	}
	var kids []child
	buf := make([]byte, 4096)
	for _, pid := range pids {
		name := strconv.Itoa(pid)
		// /proc/<pid>/stat: pid (comm) state ppid ...; comm may hold
		// anything, ')' included.
		stat := readProc(buf, "/proc/"+name+"/stat")
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 2 {
			continue
		}
		if p, err := strconv.Atoi(string(f[1])); err != nil || p != ppid {
			continue
		}
		kids = append(kids, child{pid: pid, uids: statusUIDs(readProc(buf, "/proc/"+name+"/status"))})
	}
	return kids, nil
}

// threadChildren lists ppid's children from its threads' children lists;
// false when the kernel has none (CONFIG_PROC_CHILDREN off).
func threadChildren(ppid int) ([]child, bool) {
	base := "/proc/" + strconv.Itoa(ppid) + "/task"
	d, err := os.Open(base)
	if err != nil {
		return nil, false
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil || len(tids) == 0 {
		return nil, false
	}
	var kids []child
	buf := make([]byte, 4096)
	for _, tid := range tids {
		data, err := os.ReadFile(base + "/" + tid + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(base + "/" + tid); serr == nil {
				return nil, false // no children lists in this kernel
			}
			continue // the thread ended
		}
		for _, f := range bytes.Fields(data) {
			pid, err := strconv.Atoi(string(f))
			if err != nil {
				continue
			}
			kids = append(kids, child{pid: pid, uids: statusUIDs(readProc(buf, "/proc/"+string(f)+"/status"))})
		}
	}
	return kids, true
}

// allPids lists the pids of /proc.
func allPids() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// statusUIDs reads the real, effective, saved and file-system uids off a
// /proc/<pid>/status (-1 for each it does not hold).
func statusUIDs(status []byte) [4]int {
	uids := [4]int{-1, -1, -1, -1}
	if j := bytes.Index(status, []byte("\nUid:")); j >= 0 {
		line := status[j+len("\nUid:"):]
		if k := bytes.IndexByte(line, '\n'); k >= 0 {
			line = line[:k]
		}
		for n, v := range bytes.Fields(line) {
			if n < len(uids) {
				uids[n], _ = strconv.Atoi(string(v))
			}
		}
	}
	return uids
}

// maxEnviron bounds the read of a process's environment for its mark.
const maxEnviron = 4 << 20

// readMark returns the value of EnvMark in process pid's environment, and
// whether it has one (false also when it cannot be read: a zombie, or
// another user's process to a worker that is not root).
func readMark(pid int) ([]byte, bool) {
	env, err := ReadFile("/proc/"+strconv.Itoa(pid)+"/environ", maxEnviron)
	if err != nil {
		return nil, false
	}
	key := []byte(EnvMark + "=")
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, key); ok {
			return v, true
		}
	}
	return nil, false
}

// readProc reads a small /proc file into buf (nil if it cannot).
func readProc(buf []byte, path string) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	return buf[:n]
}
