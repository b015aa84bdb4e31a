package configfile

import (
	"context"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
)

// DeviceReport is one device a worker with a config would serve, as
// `benchfleet devices` reports it (its JSON shape is that command's
// output).
type DeviceReport struct {
	ID      string `json:"id"`
	Pool    string `json:"pool"`
	Arch    string `json:"arch"`
	Chips   int    `json:"chips"`
	Path    string `json:"path"`
	Healthy bool   `json:"healthy"`
	// JobUser is the user a harness slot runs its jobs as (absent for
	// built-in slots).
	JobUser string `json:"job_user,omitempty"`
	// Walls are the walls of the box a harness slot's jobs run in, as
	// this process could build them on this host, in box.Box.Walls's
	// order (absent for built-in slots).
	Walls []box.Wall `json:"walls,omitempty"`
}

// RunnerBox is the box one harness runner's jobs would run in on this
// host, as `benchfleet devices` reports it.
type RunnerBox struct {
	// Runner is the harness runner's name (forge, tt-xla).
	Runner string
	// User is who its jobs run as (box.Box.User).
	User string
	// Walls are its walls, in box.Box.Walls's order.
	Walls []box.Wall
	// Refused is set when a wall is down that the operator did not
	// choose to take down and isolation.walls is require (the default):
	// a worker with this config would refuse to start.
	Refused bool
}

// ReportDevices plans the slots of wf (nil: none) and the built-in slots
// spec (PlanSlots: no runner is built, no checkout needed), checks each
// device's health, and builds, for each harness runner of the slots, the
// box its jobs would run in (from the config's isolation section and the
// harness's own isolation.network; box.New, with walls that are down
// reported rather than refused, in a temporary root removed before it
// returns), so the walls are those this process can build on this host.
// It returns the devices and the boxes, by runner in the slots' order.
// A config the worker would refuse is an *Error naming the key.
func ReportDevices(ctx context.Context, wf *File, slots string, log zerolog.Logger) ([]DeviceReport, []RunnerBox, error) {
	ss, err := PlanSlots(ctx, wf, slots, log)
	if err != nil {
		return nil, nil, err
	}
	boxes := map[string]RunnerBox{}
	var order []string
	for _, s := range ss {
		name := s.Device.Runner
		if k, ok := device.Lookup(name); !ok || !k.Harness {
			continue
		}
		if _, done := boxes[name]; done {
			continue
		}
		rb, err := reportBox(wf, name)
		if err != nil {
			return nil, nil, err
		}
		boxes[name] = rb
		order = append(order, name)
	}
	out := []DeviceReport{}
	for _, s := range ss {
		d := s.Device
		healthy := d.Healthy
		if s.Health != nil {
			healthy = healthy && s.Health.Check(ctx, d) == nil
		}
		r := DeviceReport{ID: d.ID, Pool: d.Pool, Arch: d.Arch, Chips: d.Chips, Path: d.Path, Healthy: healthy}
		if rb, ok := boxes[d.Runner]; ok {
			r.JobUser, r.Walls = rb.User, rb.Walls
		}
		out = append(out, r)
	}
	runners := make([]RunnerBox, 0, len(order))
	for _, name := range order {
		runners = append(runners, boxes[name])
	}
	return out, runners, nil
}

// reportBox builds the box the harness runner name's jobs would run in,
// with the isolation RunnerSettings gives it, and reads its walls.
func reportBox(wf *File, name string) (RunnerBox, error) {
	var cfg box.Config
	if wf != nil {
		h, err := wf.harness(name)
		if err != nil {
			return RunnerBox{}, err
		}
		if cfg, err = wf.harnessBox(h); err != nil {
			return RunnerBox{}, err
		}
	}
	require := cfg.Walls != box.WallsWarn
	// Down walls are the report, not an error; the box's own warnings
	// would repeat it.
	cfg.Walls, cfg.Log = box.WallsWarn, zerolog.Nop()
	tmp, err := os.MkdirTemp("", "benchfleet-devices-")
	if err != nil {
		return RunnerBox{}, configErr("config %s: isolation: a room to try the box in: %v", name, err)
	}
	defer os.RemoveAll(tmp)
	// The job user must be able to reach the rooms (box.Config.Root).
	if err := os.Chmod(tmp, 0o711); err != nil {
		return RunnerBox{}, configErr("config %s: isolation: a room to try the box in: %v", name, err)
	}
	cfg.Root = filepath.Join(tmp, name)
	b, err := box.New(cfg)
	if err != nil {
		return RunnerBox{}, configErr("config %s: isolation: %v", name, err)
	}
	defer b.Close()
	rb := RunnerBox{Runner: name, User: b.User(), Walls: b.Walls()}
	for _, w := range rb.Walls {
		if !w.Up && !w.Chosen && require {
			rb.Refused = true
		}
	}
	return rb, nil
}
