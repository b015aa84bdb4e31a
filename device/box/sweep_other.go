//go:build !linux

package box

import "fmt"

type roomHold struct{}

func holdRoom(string) (*roomHold, error) { return nil, errUnsupported }
func (*Room) note(string) error          { return nil }
func (*roomHold) release()               {}

// SweepReport is what Sweep found and removed.
type SweepReport struct{ Rooms, Cgroups, Processes int }

// Found reports whether the sweep found anything left.
func (s SweepReport) Found() bool { return s.Rooms+s.Cgroups+s.Processes > 0 }

func (s SweepReport) String() string {
	return fmt.Sprintf("%d rooms, %d cgroups, %d processes", s.Rooms, s.Cgroups, s.Processes)
}

// Sweep is only implemented on Linux.
func (b *Box) Sweep() (SweepReport, error) { return SweepReport{}, errUnsupported }

// Holder is a process that holds a file open.
type Holder struct {
	PID  int
	Comm string
	Path string
}

// Holders is only implemented on Linux: it finds none.
func Holders([]string) ([]Holder, error) { return nil, nil }
