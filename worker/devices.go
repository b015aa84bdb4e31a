package worker

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
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
}

// ReportDevices plans the slots of wf (nil: none) and the built-in slots
// spec (PlanSlots: no runner is built, no checkout needed), checks each
// device's health, and returns them with the user harness jobs run as
// ("" when no slot is a harness's).
func ReportDevices(ctx context.Context, wf *File, slots string, log zerolog.Logger) ([]DeviceReport, string, error) {
	ss, err := PlanSlots(ctx, wf, slots, log)
	if err != nil {
		return nil, "", err
	}
	var user string
	for _, s := range ss {
		if k, ok := device.Lookup(s.Device.Runner); ok && k.Harness {
			if user, err = wf.JobUser(); err != nil {
				return nil, "", err
			}
			break
		}
	}
	out := []DeviceReport{}
	for _, s := range ss {
		d := s.Device
		healthy := d.Healthy
		if s.Health != nil {
			healthy = healthy && s.Health.Check(ctx, d) == nil
		}
		r := DeviceReport{ID: d.ID, Pool: d.Pool, Arch: d.Arch, Chips: d.Chips, Path: d.Path, Healthy: healthy}
		if k, ok := device.Lookup(d.Runner); ok && k.Harness {
			r.JobUser = user
		}
		out = append(out, r)
	}
	return out, user, nil
}
