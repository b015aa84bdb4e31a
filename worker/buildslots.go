package worker

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// BuildSlots plans the slots (configfile.PlanSlots) and gives each its
// runner, one runner per kind shared by its slots. A harness's per-job and
// per-slot directories live under workDir/<runner>.
func BuildSlots(ctx context.Context, wf *configfile.File, slotsFlag, workDir string, builds device.Provisioner, log zerolog.Logger) ([]Slot, error) {
	planned, err := configfile.PlanSlots(ctx, wf, slotsFlag, log)
	if err != nil {
		return nil, err
	}
	runners := map[string]device.Runner{}
	var slots []Slot
	for _, p := range planned {
		name := p.Device.Runner
		r, ok := runners[name]
		if !ok {
			kind, _ := device.Lookup(name)
			var st device.Settings
			if kind.Harness {
				if st, err = wf.RunnerSettings(name, p.Device.ID, workDir, builds); err != nil {
					return nil, err
				}
				if st.HealthProbe == "" {
					log.Warn().Str("harness", name).Msg("no health_probe configured: a job that says this host cannot run the harness is handed to another host, and this host leaves service for the harness when its board check fails or 3 different jobs in a row say so")
				}
			}
			if r, err = kind.New(st, log); err != nil {
				return nil, &configfile.Error{Msg: fmt.Sprintf("config %s: %v", name, err)}
			}
			runners[name] = r
		}
		slots = append(slots, Slot{Device: p.Device, Runner: r, Health: p.Health, Sampler: p.Sampler})
	}
	return slots, nil
}

// CloseSlots closes the runners of slots that hold something open (a
// harness's warm sandboxes), each once, when no slot runs a job any more.
func CloseSlots(slots []Slot) error {
	var errs []error
	seen := map[device.Runner]bool{}
	for _, s := range slots {
		if c, ok := s.Runner.(io.Closer); ok && !seen[s.Runner] {
			seen[s.Runner] = true
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
