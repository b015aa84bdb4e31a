//go:build !linux

package cli

import "syscall"

// chaosProcAttr: no parent-death signal outside Linux; the chaos command
// stops its workers itself on exit and on SIGINT/SIGTERM.
func chaosProcAttr() *syscall.SysProcAttr { return nil }
