//go:build unix && !linux

package clitest

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
