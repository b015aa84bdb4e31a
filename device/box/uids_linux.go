package box

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// uidPool hands each room a uid of its own from a range, so that no two
// jobs that run at once ever share a user: a job cannot signal, trace or
// read the /proc of another, nor write its files. A uid is leased by an
// exclusive flock on LockDir/<uid>, which every worker of the host shares
// (and the kernel drops when a worker dies), and is swept of any process
// an earlier lease left before it is handed out.
type uidPool struct {
	first, last int
	dir         string

	mu   sync.Mutex
	next int
}

// newUIDPool parses spec ("FIRST-LAST") and creates dir (0700).
func newUIDPool(spec, dir string) (*uidPool, error) {
	first, last, err := parseUIDRange(spec)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("box: uid leases: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("box: uid leases: %w", err)
	}
	return &uidPool{first: first, last: last, dir: dir, next: first}, nil
}

func (p *uidPool) String() string { return fmt.Sprintf("uids %d-%d", p.first, p.last) }

// uidLease is one leased uid; release gives it back.
type uidLease struct {
	uid int
	fd  int
}

// lease takes the next free uid of the range (trying each at most once)
// and kills what processes of it are left (a crashed worker's job's).
func (p *uidPool) lease() (*uidLease, error) {
	p.mu.Lock()
	start := p.next
	p.mu.Unlock()
	n := p.last - p.first + 1
	for i := range n {
		uid := p.first + (start-p.first+i)%n
		fd, err := unix.Open(filepath.Join(p.dir, strconv.Itoa(uid)), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("box: uid lease: %w", err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue
			}
			return nil, fmt.Errorf("box: uid lease %d: %w", uid, err)
		}
		p.mu.Lock()
		p.next = uid + 1
		if p.next > p.last {
			p.next = p.first
		}
		p.mu.Unlock()
		// A lease released after its room's processes were all gone says
		// so in its file; any other (a worker that died with a job
		// running) is swept of what processes of the uid are left.
		var mark [8]byte
		n, _ := unix.Pread(fd, mark[:], 0)
		if string(mark[:n]) != leaseClean {
			if err := killUID(uid); err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("box: uid %d: processes left from an earlier job: %w", uid, err)
			}
		}
		_ = unix.Ftruncate(fd, 0)
		return &uidLease{uid: uid, fd: fd}, nil
	}
	return nil, fmt.Errorf("box: every uid of %s is in use", p)
}

// leaseClean is what a lease's file holds once released with no process
// of its uid left.
const leaseClean = "clean"

// release gives the uid back; clean says no process of it is left.
func (l *uidLease) release(clean bool) {
	if l != nil && l.fd >= 0 {
		if clean {
			_, _ = unix.Pwrite(l.fd, []byte(leaseClean), 0)
		}
		unix.Close(l.fd)
		l.fd = -1
	}
}

// killUID SIGKILLs every process whose real, effective or saved uid is uid
// (found by a scan of /proc, each signalled through a pidfd taken before
// its uid is re-read, so a reused pid is never hit), until none is left.
func killUID(uid int) error {
	for range 100 {
		pids, err := processesOf(uid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone
			}
			if uidsOf(pid, uid) {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		sleepBrief()
	}
	return fmt.Errorf("processes of uid %d still alive after SIGKILL", uid)
}

// processesOf lists the live processes (not zombies) of uid.
func processesOf(uid int) ([]int, error) {
	pids, err := allPids()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		if uidsOf(pid, uid) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// uidsOf reports whether process pid runs with uid as its real, effective
// or saved uid and is not a zombie.
func uidsOf(pid, uid int) bool {
	buf := make([]byte, 2048)
	status := readProc(buf, "/proc/"+strconv.Itoa(pid)+"/status")
	if bytes.Contains(status, []byte("\nState:\tZ")) {
		return false
	}
	u := statusUIDs(status)
	return u[0] == uid || u[1] == uid || u[2] == uid
}
