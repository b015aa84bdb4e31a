package box

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setupCgroup finds the worker's cgroup v2 directory and probes that job
// cgroups can be made in it, processes started in them and killed.
func setupCgroup() (string, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	dir, err := cgroupDir(string(mountinfo), string(self))
	if err != nil {
		return "", err
	}
	// A worker moved itself to this leaf to enable controllers for its
	// jobs (enableV2): job cgroups are made beside it, in its parent.
	if filepath.Base(dir) == workerLeaf {
		dir = filepath.Dir(dir)
	}
	if err := probeCgroup(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// cgroupDir is the directory of the worker's cgroup v2: the mount point of
// the cgroup2 file system (from /proc/self/mountinfo) holding the path of
// the "0::" line of /proc/self/cgroup.
func cgroupDir(mountinfo, self string) (string, error) {
	path, found := "", false
	for line := range strings.Lines(self) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return "", errors.New("the worker is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")
	}
	if !strings.HasPrefix(path, "/") || path == "/.." || strings.HasPrefix(path, "/../") {
		return "", fmt.Errorf("the worker's cgroup %q is outside its cgroup namespace", path)
	}
	if dir, ok := mountOf(mountinfo, path, func(fstype, _ string) bool { return fstype == "cgroup2" }); ok {
		return dir, nil
	}
	return "", fmt.Errorf("no cgroup2 mount holds the worker's cgroup %s (a cgroup v1 host?)", path)
}

// mountOf finds, in mountinfo, the first mount that match accepts (by its
// file system type and super options) and that holds the cgroup path,
// and returns path's directory under it.
func mountOf(mountinfo, path string, match func(fstype, superOpts string) bool) (string, bool) {
	for line := range strings.Lines(mountinfo) {
		// id parent major:minor root mount-point options [optional...] - type source super-options
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(f) || !match(f[sep+1], f[sep+3]) {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		rel := path
		if root != "/" {
			r, ok := strings.CutPrefix(path, root)
			if !ok || (r != "" && !strings.HasPrefix(r, "/")) {
				continue
			}
			rel = r
		}
		return filepath.Join(mnt, rel), true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// probeCgroup makes a cgroup under dir, starts a process in it the way
// Cmd does (clone3 CLONE_INTO_CGROUP: the exec of a missing program fails
// after the clone, which is the part probed), then kills what it holds and
// removes it as Close does.
func probeCgroup(dir string) error {
	probe, fd, err := makeCgroup(dir, "benchfleet-probe-"+randomToken())
	if err != nil {
		return fmt.Errorf("cannot make a cgroup under the worker's (%s): %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		_ = unix.Close(fd)
		_ = unix.Rmdir(probe)
		return fmt.Errorf("cgroup %s has no cgroup.kill (Linux 5.14+): %w", dir, err)
	}
	missing := filepath.Join(probe, "no-such-program") // cgroupfs holds no programs
	p, err := os.StartProcess(missing, []string{"probe"}, &os.ProcAttr{Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}})
	if err == nil { // cannot happen
		_ = p.Kill()
		_, _ = p.Wait()
	}
	if kerr := killCgroup(probe, fd, time.Now().Add(5*time.Second)); kerr != nil {
		return kerr
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("the kernel refuses to start a process in a cgroup (clone3 CLONE_INTO_CGROUP): %w", err)
	}
	return nil
}

// makeCgroup makes cgroup parent/name and opens it for CLONE_INTO_CGROUP.
func makeCgroup(parent, name string) (string, int, error) {
	dir := filepath.Join(parent, name)
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return "", -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return "", -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return dir, fd, nil
}

// writeKill kills every process in cgroup dir and its descendants.
func writeKill(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("1"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// killCgroup kills every process of cgroup dir, waits until it is empty
// (until deadline) and removes it; fd is its descriptor, closed.
func killCgroup(dir string, fd int, deadline time.Time) error {
	if err := emptyCgroup(dir, fd, deadline); err != nil {
		return err
	}
	return removeCgroup(dir, deadline)
}

// emptyCgroup kills every process of cgroup dir (its fd is closed) and
// waits until none is left, at most until deadline.
func emptyCgroup(dir string, fd int, deadline time.Time) error {
	_ = unix.Close(fd)
	if err := writeKill(dir); err != nil {
		return fmt.Errorf("cgroup kill: %w", err)
	}
	delay := time.Millisecond
	for {
		events, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if bytes.Contains(events, []byte("populated 0")) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still populated after SIGKILL (cgroup.kill)", dir)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// removeCgroup removes the empty cgroup dir, retrying while the kernel
// still holds it, at most until deadline.
func removeCgroup(dir string, deadline time.Time) error {
	delay := time.Millisecond
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %w", &os.PathError{Op: "rmdir", Path: dir, Err: err})
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}
