//go:build unix && !linux

package faulttest

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
