package bench

import "syscall"

// procAttr makes the kernel kill a chaos worker when the chaos
// process dies, so no worker outlives its run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
