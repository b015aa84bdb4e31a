package box

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A worker that dies (SIGKILL, a crash, the host's OOM killer) while its
// jobs run leaves their rooms: the tmpfs mounted at Dir/j, the cgroups,
// and whatever processes of the job are still alive (in the cgroups, as
// the job's uid, or marked with the room's EnvMark). Each room therefore
// holds, from the moment it is made, a record the worker writes and locks
// (Dir/.room, an exclusive flock the kernel drops when the worker dies):
// the room's token, its uid and its cgroups. Sweep, at a worker's start,
// takes every room of Root whose record no live worker holds, kills what
// it ran and removes it.

// roomRecordName is the room's record, in Dir (the worker's, 0711: the
// job cannot write it).
const roomRecordName = ".room"

// roomRecord is what Sweep needs to clean up a room whose worker died.
type roomRecord struct {
	Token string `json:"token"`
	// UID is the uid leased for the room (0: none).
	UID int `json:"uid,omitempty"`
	// Cgroups are the room's cgroup directories, v2 and v1, made or about
	// to be made.
	Cgroups []string `json:"cgroups,omitempty"`
}

// roomHold is the open, locked record of a room.
type roomHold struct{ fd int }

// holdRoom creates and locks dir's record. The descriptor is close-on-exec:
// no process of the job inherits the lock (one that did would keep a dead
// worker's room alive).
func holdRoom(dir string) (*roomHold, error) {
	fd, err := unix.Open(filepath.Join(dir, roomRecordName), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("room record: %w", err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("room record: lock: %w", err)
	}
	return &roomHold{fd: fd}, nil
}

// note writes the room's record: call it before any cgroup named there is
// made, so that a worker dying at any moment leaves none unnamed.
func (r *Room) note(cgName string) error {
	if r.hold == nil {
		return nil
	}
	rec := roomRecord{Token: r.token}
	if r.lease != nil {
		rec.UID = r.lease.uid
	}
	if r.box.cgroup != "" {
		rec.Cgroups = append(rec.Cgroups, filepath.Join(r.box.cgroup, cgName))
	}
	for _, ctl := range limitControllers {
		if d := r.box.ctl.v1[ctl]; d != "" {
			rec.Cgroups = append(rec.Cgroups, filepath.Join(d, cgName))
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// Written once, into the fresh (empty) file.
	if _, err := unix.Pwrite(r.hold.fd, data, 0); err != nil {
		return fmt.Errorf("room record: %w", err)
	}
	return nil
}

// release unlocks and closes the record (a nil hold is fine).
func (h *roomHold) release() {
	if h != nil && h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

// SweepReport is what Sweep found and removed.
type SweepReport struct {
	// Rooms are the rooms of dead workers removed.
	Rooms int
	// Cgroups are their cgroups removed (v2 and v1 directories).
	Cgroups int
	// Processes are their processes killed.
	Processes int
}

// Found reports whether the sweep found anything left.
func (s SweepReport) Found() bool { return s.Rooms+s.Cgroups+s.Processes > 0 }

func (s SweepReport) String() string {
	return fmt.Sprintf("%d rooms, %d cgroups, %d processes", s.Rooms, s.Cgroups, s.Processes)
}

// sweepUnrecordedAge is how old a room without a record (a worker died
// between making its directory and its record, or an older version's
// room) must be before Sweep removes it: a younger one may be a live
// worker's, being made. One that a live process carries the mark of is
// never removed (an older version's worker may still run its job).
const sweepUnrecordedAge = time.Minute

// Sweep cleans up after workers that died while their jobs ran: for each
// room of Root whose record no live worker holds, it kills every process
// of the room (its cgroups', its uid's when no live lease holds that uid,
// and those marked as the room's), then removes its cgroups, unmounts its
// tmpfs and deletes it. Rooms of live workers, this one's included, are
// left alone. Call it at the worker's start, before any job runs. The
// error names what could not be cleaned; the report counts what was.
func (b *Box) Sweep() (SweepReport, error) {
	var rep SweepReport
	dirs, err := filepath.Glob(filepath.Join(b.root, "job-*"))
	if err != nil {
		return rep, fmt.Errorf("box: sweep %s: %w", b.root, err)
	}
	var errs []error
	var orphans []orphan
	for _, dir := range dirs {
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			continue
		}
		fd, err := unix.Open(filepath.Join(dir, roomRecordName), unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if time.Since(st.ModTime()) > sweepUnrecordedAge {
				orphans = append(orphans, orphan{dir: dir})
			}
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("box: sweep %s: %w", dir, err))
			continue
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd) // a live worker's room
			continue
		}
		o := orphan{dir: dir, hold: &roomHold{fd: fd}}
		data := make([]byte, 64<<10)
		n, _ := unix.Pread(fd, data, 0)
		if n > 0 {
			if err := json.Unmarshal(data[:n], &o.rec); err != nil {
				errs = append(errs, fmt.Errorf("box: sweep %s: record: %w", dir, err))
			}
		}
		orphans = append(orphans, o)
	}
	orphans = withoutLiveUnrecorded(orphans)
	if len(orphans) == 0 {
		return rep, errors.Join(errs...)
	}
	deadline := time.Now().Add(b.killTimeout)
	tokens := map[string]bool{}
	for _, o := range orphans {
		if o.rec.Token != "" {
			tokens[o.rec.Token] = true
		}
	}
	// Every process of the rooms: their cgroups first (v2 kills them all
	// at once), then what their uids and marks find.
	for _, o := range orphans {
		for _, cg := range o.rec.Cgroups {
			n, err := sweepCgroup(cg, deadline)
			rep.Processes += n
			if err != nil {
				errs = append(errs, fmt.Errorf("box: sweep %s: %w", o.dir, err))
			}
		}
		if o.rec.UID > 0 {
			n, err := b.sweepUID(o.rec.UID)
			rep.Processes += n
			if err != nil {
				errs = append(errs, fmt.Errorf("box: sweep %s: %w", o.dir, err))
			}
		}
	}
	n, err := killMarked(tokens, deadline)
	rep.Processes += n
	if err != nil {
		errs = append(errs, fmt.Errorf("box: sweep: %w", err))
	}
	for _, o := range orphans {
		gone := true
		for _, cg := range o.rec.Cgroups {
			removed, err := removeCgroupDir(cg, deadline)
			if removed {
				rep.Cgroups++
			}
			if err != nil {
				gone = false
				errs = append(errs, fmt.Errorf("box: sweep %s: %w", o.dir, err))
			}
		}
		if gone {
			if err := RemoveRoom(o.dir); err != nil {
				errs = append(errs, fmt.Errorf("box: sweep: %w", err))
			} else {
				rep.Rooms++
			}
		}
		o.hold.release()
	}
	return rep, errors.Join(errs...)
}

// jobCgroup reports whether dir names a job cgroup of a box: an absolute
// path under /sys/fs/cgroup whose name is benchfleet-job-<token>. A record
// naming anything else is not acted on.
func jobCgroup(dir string) bool {
	return filepath.IsAbs(dir) && filepath.Clean(dir) == dir && strings.HasPrefix(dir, "/sys/fs/cgroup/") &&
		strings.HasPrefix(filepath.Base(dir), "benchfleet-job-")
}

// sweepCgroup kills every process of the job cgroup dir (v2: cgroup.kill;
// v1: SIGKILL to each of its cgroup.procs) and waits until it is empty,
// at most until deadline. A cgroup that does not exist is fine. It
// returns how many processes it found there.
func sweepCgroup(dir string, deadline time.Time) (int, error) {
	if !jobCgroup(dir) {
		return 0, fmt.Errorf("record names %q, not a job cgroup: left alone", dir)
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	found := len(bytes.Fields(procs))
	if found == 0 {
		return 0, nil
	}
	v2 := true
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		v2 = false
	}
	delay := time.Millisecond
	for {
		if v2 {
			if err := writeKill(dir); err != nil {
				return found, fmt.Errorf("cgroup %s: kill: %w", dir, err)
			}
		} else {
			for f := range bytes.FieldsSeq(procs) {
				if pid, err := strconv.Atoi(string(f)); err == nil {
					killPid(pid)
				}
			}
		}
		procs, err = os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(bytes.Fields(procs)) == 0 {
			return found, nil
		}
		if time.Now().After(deadline) {
			return found, fmt.Errorf("cgroup %s still holds processes after SIGKILL", dir)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// removeCgroupDir removes the emptied job cgroup dir (retrying while the
// kernel still tears its last process down, until deadline); removed is
// whether it was there.
func removeCgroupDir(dir string, deadline time.Time) (removed bool, err error) {
	if !jobCgroup(dir) {
		return false, nil // said by sweepCgroup
	}
	delay := time.Millisecond
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.ENOENT):
			return false, nil
		case !errors.Is(err, unix.EBUSY) || time.Now().After(deadline):
			return false, fmt.Errorf("cgroup: %w", &os.PathError{Op: "rmdir", Path: dir, Err: err})
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// sweepUID kills the processes of a dead worker's room's uid, unless a
// live worker has leased the uid since (its lease swept it then, and its
// processes are its own job's). It returns how many it killed.
func (b *Box) sweepUID(uid int) (int, error) {
	if b.uids == nil || uid < b.uids.first || uid > b.uids.last {
		return 0, nil
	}
	fd, err := unix.Open(filepath.Join(b.uids.dir, strconv.Itoa(uid)), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, fmt.Errorf("uid %d: lease: %w", uid, err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return 0, nil // leased again: not the dead room's any more
	}
	pids, _ := processesOf(uid)
	if err := killUID(uid); err != nil {
		return len(pids), err
	}
	_ = unix.Ftruncate(fd, 0)
	_, _ = unix.Pwrite(fd, []byte(leaseClean), 0)
	return len(pids), nil
}

// killMarked kills every process whose EnvMark names one of tokens (a
// room's, of whichever worker process), until none is left or deadline.
// Each is signalled through a pidfd taken before its mark is read again,
// so a pid reused meanwhile is never hit. It returns how many it found.
func killMarked(tokens map[string]bool, deadline time.Time) (int, error) {
	if len(tokens) == 0 {
		return 0, nil
	}
	ours := func(pid int) bool {
		mark, ok := readMark(pid)
		if !ok {
			return false
		}
		i := bytes.LastIndexByte(mark, '.')
		return i >= 0 && tokens[string(mark[i+1:])]
	}
	found := map[int]bool{}
	for {
		pids, err := allPids()
		if err != nil {
			return len(found), err
		}
		left := 0
		for _, pid := range pids {
			if !ours(pid) {
				continue
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone
			}
			if ours(pid) {
				found[pid] = true
				left++
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		if left == 0 {
			return len(found), nil
		}
		if time.Now().After(deadline) {
			return len(found), fmt.Errorf("%d processes of dead workers' rooms still alive after SIGKILL", left)
		}
		sleepBrief()
	}
}

// killPid sends SIGKILL to pid (read from a job cgroup's cgroup.procs a
// moment before) through a pidfd.
func killPid(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	unix.Close(fd)
}

// orphan is a room Sweep takes: its directory, and its record (hold nil
// when it has none).
type orphan struct {
	dir  string
	rec  roomRecord
	hold *roomHold
}

// token is the room's token: the last part of its directory's name.
func (o orphan) token() string {
	base := filepath.Base(o.dir)
	return base[strings.LastIndexByte(base, '-')+1:]
}

// withoutLiveUnrecorded drops the rooms without a record whose token a
// live process carries as its mark.
func withoutLiveUnrecorded(rooms []orphan) []orphan {
	tokens := map[string]bool{}
	for _, o := range rooms {
		if o.hold == nil {
			tokens[o.token()] = true
		}
	}
	if len(tokens) == 0 {
		return rooms
	}
	live := map[string]bool{}
	pids, _ := allPids()
	for _, pid := range pids {
		if mark, ok := readMark(pid); ok {
			if i := bytes.LastIndexByte(mark, '.'); i >= 0 && tokens[string(mark[i+1:])] {
				live[string(mark[i+1:])] = true
			}
		}
	}
	out := rooms[:0]
	for _, o := range rooms {
		if o.hold == nil && live[o.token()] {
			continue
		}
		out = append(out, o)
	}
	return out
}
