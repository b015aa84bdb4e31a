package build

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// detach runs cmd in a session of its own (no controlling terminal, so
// ssh or a credential helper cannot prompt on one), kills its whole
// process group when ctx ends, and kills it when the worker dies.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// syncFS flushes the file system holding dir to disk, so an entry renamed
// into place after it never points at data a power loss drops.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}

// freeBytes is what an unprivileged writer may still write on the file
// system holding dir, or -1 when unknown.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// ownedPath checks that dir is the worker's (its owner is the worker's
// uid) and that no directory above it lets another user replace it: each
// is owned by root or the worker, and writable by others only when sticky
// (/tmp). A cache in a directory another user made (a /tmp/builds made
// before the worker started) could have its builds swapped by that user.
func ownedPath(dir string) error {
	uid := uint32(unix.Geteuid())
	for d, first := dir, true; ; d, first = filepath.Dir(d), false {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return err
		}
		switch {
		case first && st.Uid != uid:
			return fmt.Errorf("%s is owned by uid %d, not the worker's %d: its owner could replace the builds jobs run", d, st.Uid, uid)
		case !first && st.Uid != 0 && st.Uid != uid:
			return fmt.Errorf("%s (above the cache %s) is owned by uid %d: its owner could replace the cache", d, dir, st.Uid)
		case !first && st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0:
			return fmt.Errorf("%s (above the cache %s) is writable by every user and not sticky: any user could replace the cache", d, dir)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
