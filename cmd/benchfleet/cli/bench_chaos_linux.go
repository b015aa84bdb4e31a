package cli

import "syscall"

// chaosProcAttr makes the kernel kill a chaos worker when the chaos
// process dies, so no worker outlives its run.
func chaosProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
