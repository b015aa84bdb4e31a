//go:build !linux

package bench

import "syscall"

// procAttr: no parent-death signal outside Linux; the chaos command
// stops its workers itself on exit and on SIGINT/SIGTERM.
func procAttr() *syscall.SysProcAttr { return nil }
