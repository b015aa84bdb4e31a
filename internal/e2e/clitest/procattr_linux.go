package clitest

import "syscall"

// procAttr makes the kernel SIGKILL a subprocess when the test process
// dies, so no worker outlives a crashed or timed-out test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
