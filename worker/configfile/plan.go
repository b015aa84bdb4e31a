package configfile

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// PlannedSlot is a slot before its runner exists: what `devices` lists and
// what worker.BuildSlots gives a runner.
type PlannedSlot struct {
	Device  device.Device
	Health  device.Health
	Sampler device.Sampler
}

// PlanSlots turns --slots, the config's slots and discovery into devices
// with the name of their runner kind; it needs no checkout and starts no
// runner. A static Tenstorrent slot's device nodes are resolved to their
// PCI addresses (device.ResolveNodes: sysfs, else a tt-smi snapshot); a
// node that resolves neither way is an error naming it, since the slot
// could not name its board to the harness. Errors name the config key.
func PlanSlots(ctx context.Context, wf *File, slotsFlag string, log zerolog.Logger) ([]PlannedSlot, error) {
	var slots []PlannedSlot
	if slotsFlag != "" {
		devs, err := device.BuiltinSlots(slotsFlag)
		if err != nil {
			return nil, configErr("--slots: %v", err)
		}
		for _, d := range devs {
			slots = append(slots, PlannedSlot{Device: d})
		}
	}
	if wf == nil {
		return slots, nil
	}
	dcfg := device.DiscoverConfig{TTSMI: wf.Discovery.TTSMI, DevRoot: wf.Discovery.DevRoot, SysRoot: wf.Discovery.SysRoot, Log: log}
	health, sampler := device.NewTTHealth(dcfg), device.NewTTSampler(dcfg)
	for i, s := range wf.Slots {
		key := fmt.Sprintf("config slots[%d]", i)
		if !protocol.ValidPool(s.Pool) {
			return nil, configErr("%s.pool %q: want one of %v", key, s.Pool, protocol.Pools)
		}
		runner := s.Runner
		if runner == "" {
			runner = protocol.DefaultRunner(s.Pool)
		}
		kind, ok := device.Lookup(runner)
		if !ok {
			return nil, configErr("%s.runner %q: want one of %v", key, runner, device.KindNames())
		}
		if protocol.IsBuiltinPool(s.Pool) {
			if len(s.Devices) > 0 {
				return nil, configErr("%s: built-in pool %s takes count, not devices", key, s.Pool)
			}
			if s.Count < 1 || s.Count > device.MaxBuiltinSlots {
				return nil, configErr("%s.count %d: want 1..%d", key, s.Count, device.MaxBuiltinSlots)
			}
			if runner != s.Pool {
				return nil, configErr("%s: pool %s runs the %s runner, not %q", key, s.Pool, s.Pool, runner)
			}
			for k := range s.Count {
				id := fmt.Sprintf("%s-%d", s.Pool, countPool(slots, s.Pool)+k)
				slots = append(slots, PlannedSlot{Device: device.Device{ID: id, Pool: s.Pool, Runner: runner, Chips: 1, Healthy: true}})
			}
			continue
		}
		if !kind.Harness {
			return nil, configErr("%s: Tenstorrent pool %s runs a harness (%v), not the built-in %s runner", key, s.Pool, device.HarnessNames(), runner)
		}
		if len(s.Devices) == 0 || s.Count != 0 {
			return nil, configErr("%s: Tenstorrent pool %s takes devices: [\"0\", ...], not count", key, s.Pool)
		}
		nodes := make([]int, len(s.Devices))
		for j, d := range s.Devices {
			n, err := strconv.Atoi(d)
			if err != nil || n < 0 || strconv.Itoa(n) != d {
				return nil, configErr("%s.devices: %q is not a device node number like \"0\"", key, d)
			}
			nodes[j] = n
		}
		id := "tt" + s.Devices[0]
		if hasDevice(slots, id) {
			return nil, configErr("%s: device %s is already a slot", key, id)
		}
		// The harness and tt-smi name the board by PCI address: a node
		// number means another board to tt-umd >= 0.9.3 when nodes are
		// sparse.
		board, err := device.ResolveNodes(ctx, dcfg, nodes)
		if err != nil {
			return nil, fmt.Errorf("%s.devices: %w", key, err)
		}
		dev := device.Device{ID: id, Pool: s.Pool, Runner: runner, Chips: len(s.Devices),
			Path: board.Path, Nodes: board.Nodes, BDFs: board.BDFs, Visible: board.Visible, Healthy: true}
		slots = append(slots, PlannedSlot{Device: dev, Health: health, Sampler: sampler})
	}
	if !wf.Discovery.Enabled && (wf.Discovery.TTSMI != "" || wf.Discovery.DevRoot != "") && len(wf.Slots) == 0 {
		log.Warn().Msg("config: discovery has tt_smi/dev_root but not enabled: true, so no board is discovered")
	}
	if wf.Discovery.Enabled {
		runner := wf.Discovery.Runner
		if runner == "" {
			runner = protocol.DefaultHarness
		}
		if k, ok := device.Lookup(runner); !ok || !k.Harness {
			return nil, configErr("config discovery.runner %q: want one of %v", runner, device.HarnessNames())
		}
		devs, err := device.Discover(ctx, dcfg)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		for _, d := range devs {
			if hasDevice(slots, d.ID) {
				continue // configured statically
			}
			d.Runner = runner
			slots = append(slots, PlannedSlot{Device: d, Health: health, Sampler: sampler})
		}
	}
	return slots, nil
}

func countPool(slots []PlannedSlot, pool string) int {
	n := 0
	for _, s := range slots {
		if s.Device.Pool == pool {
			n++
		}
	}
	return n
}

func hasDevice(slots []PlannedSlot, id string) bool {
	for _, s := range slots {
		if s.Device.ID == id {
			return true
		}
	}
	return false
}

// RunnerSettings are the settings of the harness runner name, whose first
// slot is slot: its harness section (harnesses.<name>, or forge: for
// forge), the box its jobs run in, and its per-job and per-slot
// directories under workDir/<name>. A harness without a workdir (the
// upstream checkout) is an error naming the key.
func (wf *File) RunnerSettings(name, slot, workDir string, builds device.Provisioner) (device.Settings, error) {
	h, err := wf.harness(name)
	if err != nil {
		return device.Settings{}, err
	}
	if h.Workdir == "" {
		key := "harnesses." + name + ".workdir"
		if name == protocol.RunnerForge {
			key = "forge.workdir"
		}
		return device.Settings{}, configErr("slot %s runs the %s harness: the config needs %s (the upstream checkout)", slot, name, key)
	}
	isolation, err := wf.harnessBox(h)
	if err != nil {
		return device.Settings{}, err
	}
	return device.Settings{Workdir: h.Workdir, Python: h.Python, Env: h.Env, TempDir: filepath.Join(workDir, name), HealthProbe: h.HealthProbe,
		Box: isolation, Builds: builds}, nil
}
