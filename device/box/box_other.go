//go:build !linux

package box

import (
	"errors"
	"os/exec"
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

func emptyCgroup(string, int, time.Time) error { return nil }

func removeCgroup(string, time.Time) error { return nil }

type uidPool struct{}

func (*uidPool) String() string { return "" }

func newUIDPool(string, string) (*uidPool, error) { return nil, errUnsupported }

type uidLease struct{ uid int }

func (*uidLease) release(bool) {}

func (*uidPool) lease() (*uidLease, error) { return nil, errUnsupported }

func killUID(int) error { return nil }

func processesOf(int) ([]int, error) { return nil, nil }

type controllers struct {
	v2      map[string]bool
	v1      map[string]string
	why     map[string]string
	allowed bool
}

func findControllers(string, bool) controllers {
	return controllers{why: map[string]string{"pids": errUnsupported.Error(), "memory": errUnsupported.Error(), "cpu": errUnsupported.Error()}}
}

type jobCgroups struct{}

func (*Box) setLimits(string, string) (jobCgroups, error) { return jobCgroups{}, nil }
func (jobCgroups) hits(string) []Hit                      { return nil }
func (jobCgroups) remove(time.Time) error                 { return nil }

type handshake struct{ child int }

func newHandshake(*exec.Cmd) (*handshake, error)  { return nil, errUnsupported }
func (*handshake) release(int, jobCgroups) error  { return errUnsupported }
func (*handshake) close()                         {}
func setupSandbox(string, *Box) (string, error)   { return "", errUnsupported }
func (r *Room) bwrapArgs(argv []string) []string  { return argv }
func (*Box) diskBound() bool                      { return false }
func mountRoom(string, int64) error               { return errUnsupported }
func unmountRoom(string) error                    { return nil }
func roomFull(string) bool                        { return false }
func signalUID(int, syscall.Signal, map[int]bool) {}

// RemoveRoom deletes a room directory.
func RemoveRoom(dir string) error { return removeTree(dir) }

type warmPool struct{}

type warmStart struct{ job, cmd *exec.Cmd }

func (b *Box) takeWarm(Spec) *Room { return nil }

func (b *Box) prepareWarm(Spec) {}

// Close is a no-op off Linux (no warm rooms).
func (b *Box) Close() error { return nil }

func (r *Room) closeWarm() {}

func (r *Room) launch(*exec.Cmd) error { return errUnsupported }

func (r *Room) waitJob(*exec.Cmd) error { return errUnsupported }

func (r *Room) binds(string) bool { return false }

func launchable([]string, []string) bool { return false }

type tidyQueue struct{}

func (b *Box) lifecycle() bool { return false }

func (b *Box) later(func() error) bool { return false }
