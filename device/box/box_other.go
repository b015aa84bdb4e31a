//go:build !linux

package box

import (
	"errors"
	"syscall"
	"time"
)

// errUnsupported is New's error off Linux: the box needs cgroups or
// PR_SET_CHILD_SUBREAPER, and clone3.
var errUnsupported = errors.New("the job box needs Linux")

// ProtectSelf is only implemented on Linux.
func ProtectSelf() error { return errUnsupported }

func (r *Room) sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func becomeSubreaper() error { return errUnsupported }

func reapsOrphans() bool { return false }

func (r *Room) reapOrphans(time.Time) error { return nil }

func setupCgroup() (string, error) { return "", errUnsupported }

func makeCgroup(string, string) (string, int, error) { return "", -1, errUnsupported }

func killCgroup(string, int, time.Time) error { return nil }
