package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/cpu"
	"github.com/benchfleet/benchfleet/device/forge"
	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

// workerFile is the worker's YAML config (DESIGN §7). Decoding is strict:
// an unknown key is an error naming it.
type workerFile struct {
	NATS      string        `yaml:"nats"`
	Store     string        `yaml:"store"`
	ID        string        `yaml:"id"`
	Slots     []slotSpec    `yaml:"slots"`
	Discovery discoverySpec `yaml:"discovery"`
	Forge     forgeSpec     `yaml:"forge"`
	Spool     string        `yaml:"spool"`
	Timeouts  timeoutsSpec  `yaml:"timeouts"`
}

type slotSpec struct {
	Pool    string   `yaml:"pool"`
	Runner  string   `yaml:"runner"`
	Devices []string `yaml:"devices"`
	Count   int      `yaml:"count"`
}

type discoverySpec struct {
	Enabled bool   `yaml:"enabled"`
	TTSMI   string `yaml:"tt_smi"`
	DevRoot string `yaml:"dev_root"`
}

type forgeSpec struct {
	Workdir string            `yaml:"workdir"`
	Python  string            `yaml:"python"`
	Env     map[string]string `yaml:"env"`
}

type timeoutsSpec struct {
	Job   string `yaml:"job"`
	Drain string `yaml:"drain"`
}

func loadWorkerFile(path string) (*workerFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("--config: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var wf workerFile
	if err := dec.Decode(&wf); err != nil && !errors.Is(err, io.EOF) {
		return nil, usageErr("--config %s: %v", path, err)
	}
	return &wf, nil
}

func (t timeoutsSpec) durations() (job, drain time.Duration, err error) {
	if t.Job != "" {
		if job, err = time.ParseDuration(t.Job); err != nil || job <= 0 {
			return 0, 0, usageErr("config timeouts.job %q: want a positive duration like 30m", t.Job)
		}
	}
	if t.Drain != "" {
		if drain, err = time.ParseDuration(t.Drain); err != nil || drain <= 0 {
			return 0, 0, usageErr("config timeouts.drain %q: want a positive duration like 10m", t.Drain)
		}
	}
	return job, drain, nil
}

// buildSlots turns --slots, the config's slots and discovery into worker
// slots with their runners and health checks.
func buildSlots(ctx context.Context, wf *workerFile, slotsFlag, workDir string, log zerolog.Logger) ([]worker.Slot, error) {
	var slots []worker.Slot
	runners := map[string]device.Runner{}
	runnerFor := func(name string) (device.Runner, error) {
		if r, ok := runners[name]; ok {
			return r, nil
		}
		var r device.Runner
		switch name {
		case protocol.RunnerCPU:
			c, err := cpu.New(cpu.Config{})
			if err != nil {
				return nil, err
			}
			r = c
		case protocol.RunnerSim:
			r = sim.New()
		case protocol.RunnerForge:
			if wf == nil || wf.Forge.Workdir == "" {
				return nil, usageErr("forge slots need forge.workdir (the upstream checkout) in --config")
			}
			f, err := forge.New(forge.Config{Workdir: wf.Forge.Workdir, Python: wf.Forge.Python, Env: wf.Forge.Env,
				TempDir: filepath.Join(workDir, "forge")}, log)
			if err != nil {
				return nil, usageErr("config forge: %v", err)
			}
			r = f
		default:
			return nil, usageErr("runner %q: want forge, cpu or sim", name)
		}
		runners[name] = r
		return r, nil
	}
	addBuiltin := func(devs []device.Device) error {
		for _, d := range devs {
			r, err := runnerFor(d.Runner)
			if err != nil {
				return err
			}
			slots = append(slots, worker.Slot{Device: d, Runner: r})
		}
		return nil
	}
	if slotsFlag != "" {
		devs, err := device.BuiltinSlots(slotsFlag)
		if err != nil {
			return nil, usageErr("--slots: %v", err)
		}
		if err := addBuiltin(devs); err != nil {
			return nil, err
		}
	}
	if wf == nil {
		return slots, nil
	}
	dcfg := device.DiscoverConfig{TTSMI: wf.Discovery.TTSMI, DevRoot: wf.Discovery.DevRoot, Log: log}
	health := device.NewTTHealth(dcfg)
	for i, s := range wf.Slots {
		if !protocol.ValidPool(s.Pool) {
			return nil, usageErr("config slots[%d].pool %q: want one of %v", i, s.Pool, protocol.Pools)
		}
		runner := s.Runner
		if runner == "" {
			runner = defaultRunner(s.Pool)
		}
		switch {
		case s.Pool == "cpu" || s.Pool == "sim":
			if len(s.Devices) > 0 {
				return nil, usageErr("config slots[%d]: built-in pool %s takes count, not devices", i, s.Pool)
			}
			if s.Count < 1 || s.Count > device.MaxBuiltinSlots {
				return nil, usageErr("config slots[%d].count %d: want 1..%d", i, s.Count, device.MaxBuiltinSlots)
			}
			if runner != s.Pool {
				return nil, usageErr("config slots[%d]: pool %s runs the %s runner, not %q", i, s.Pool, s.Pool, runner)
			}
			devs, err := device.BuiltinSlots(fmt.Sprintf("%s=%d", s.Pool, s.Count))
			if err != nil {
				return nil, usageErr("config slots[%d]: %v", i, err)
			}
			// Keep ids unique across entries of the same pool.
			for k := range devs {
				devs[k].ID = fmt.Sprintf("%s-%d", s.Pool, countPool(slots, s.Pool)+k)
			}
			if err := addBuiltin(devs); err != nil {
				return nil, err
			}
		default:
			if len(s.Devices) == 0 || s.Count != 0 {
				return nil, usageErr("config slots[%d]: Tenstorrent pool %s takes devices: [\"0\", ...], not count", i, s.Pool)
			}
			r, err := runnerFor(runner)
			if err != nil {
				return nil, err
			}
			root := wf.Discovery.DevRoot
			if root == "" {
				root = "/dev/tenstorrent"
			}
			visible := ""
			for k, d := range s.Devices {
				if k > 0 {
					visible += ","
				}
				visible += d
			}
			dev := device.Device{ID: "tt" + s.Devices[0], Pool: s.Pool, Runner: runner, Chips: len(s.Devices),
				Path: filepath.Join(root, s.Devices[0]), Visible: visible, Healthy: true}
			slots = append(slots, worker.Slot{Device: dev, Runner: r, Health: health})
		}
	}
	if wf.Discovery.Enabled {
		devs, err := device.Discover(ctx, dcfg)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		for _, d := range devs {
			if hasDevice(slots, d.ID) {
				continue // configured statically
			}
			d.Runner = protocol.RunnerForge
			r, err := runnerFor(d.Runner)
			if err != nil {
				return nil, err
			}
			slots = append(slots, worker.Slot{Device: d, Runner: r, Health: health})
		}
	}
	return slots, nil
}

func countPool(slots []worker.Slot, pool string) int {
	n := 0
	for _, s := range slots {
		if s.Device.Pool == pool {
			n++
		}
	}
	return n
}

func hasDevice(slots []worker.Slot, id string) bool {
	for _, s := range slots {
		if s.Device.ID == id {
			return true
		}
	}
	return false
}

func defaultRunner(pool string) string {
	switch pool {
	case "cpu", "sim":
		return pool
	default:
		return protocol.RunnerForge
	}
}
