package build

import (
	"os/exec"
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
