package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/device"
	_ "github.com/benchfleet/benchfleet/device/cpu"     // registers the cpu runner
	_ "github.com/benchfleet/benchfleet/device/harness" // registers forge, tt-xla
	_ "github.com/benchfleet/benchfleet/device/sim"     // registers the sim runner
	"github.com/benchfleet/benchfleet/internal/yamlerr"
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
	// Forge is the forge harness's settings (the same as harnesses.forge).
	Forge *harnessSpec `yaml:"forge"`
	// Harnesses holds each harness runner's settings by runner name
	// (forge, tt-xla, ...): a slot names its harness with `runner:`.
	Harnesses map[string]harnessSpec `yaml:"harnesses"`
	Spool     string                 `yaml:"spool"`
	Timeouts  timeoutsSpec           `yaml:"timeouts"`
	// MetricsListen is the address of /metrics and /healthz (e.g.
	// 0.0.0.0:9464); empty = not served.
	MetricsListen string `yaml:"metrics_listen"`
	// Notify is where quarantines and dead letters are told.
	Notify notifySpec `yaml:"notify"`
}

// notifySpec is the worker config's notify: section.
type notifySpec struct {
	// URL receives a JSON POST (Slack/Mattermost compatible text) when a
	// device is quarantined or a job is dead-lettered; empty = none.
	URL string `yaml:"url"`
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
	SysRoot string `yaml:"sysfs_root"`
	// Runner is the harness discovered boards run (default forge).
	Runner string `yaml:"runner"`
}

type timeoutsSpec struct {
	Job   string `yaml:"job"`
	Drain string `yaml:"drain"`
}

type harnessSpec struct {
	Workdir string            `yaml:"workdir"`
	Python  string            `yaml:"python"`
	Env     map[string]string `yaml:"env"`
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
		return nil, usageErr("--config %s: %v", path, yamlerr.Clean(err))
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

// harness returns the settings of the harness runner name: harnesses.<name>,
// or the forge: section for forge (giving both is an error).
func (wf *workerFile) harness(name string) (harnessSpec, error) {
	if wf == nil {
		return harnessSpec{}, nil
	}
	h, ok := wf.Harnesses[name]
	if name == protocol.RunnerForge && wf.Forge != nil {
		if ok {
			return h, usageErr("config: give the forge harness's settings once, in forge: or in harnesses.forge, not both")
		}
		h = *wf.Forge
	}
	return h, nil
}

// plannedSlot is a slot before its runner exists: what `devices` lists and
// what buildSlots gives a runner.
type plannedSlot struct {
	Device  device.Device
	Health  device.Health
	Sampler device.Sampler
}

// planSlots turns --slots, the config's slots and discovery into devices
// with the name of their runner kind; it needs no checkout and starts no
// runner. Errors name the config key.
func planSlots(ctx context.Context, wf *workerFile, slotsFlag string, log zerolog.Logger) ([]plannedSlot, error) {
	var slots []plannedSlot
	if slotsFlag != "" {
		devs, err := device.BuiltinSlots(slotsFlag)
		if err != nil {
			return nil, usageErr("--slots: %v", err)
		}
		for _, d := range devs {
			slots = append(slots, plannedSlot{Device: d})
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
			return nil, usageErr("%s.pool %q: want one of %v", key, s.Pool, protocol.Pools)
		}
		runner := s.Runner
		if runner == "" {
			runner = protocol.DefaultRunner(s.Pool)
		}
		kind, ok := device.Lookup(runner)
		if !ok {
			return nil, usageErr("%s.runner %q: want one of %v", key, runner, device.KindNames())
		}
		if protocol.IsBuiltinPool(s.Pool) {
			if len(s.Devices) > 0 {
				return nil, usageErr("%s: built-in pool %s takes count, not devices", key, s.Pool)
			}
			if s.Count < 1 || s.Count > device.MaxBuiltinSlots {
				return nil, usageErr("%s.count %d: want 1..%d", key, s.Count, device.MaxBuiltinSlots)
			}
			if runner != s.Pool {
				return nil, usageErr("%s: pool %s runs the %s runner, not %q", key, s.Pool, s.Pool, runner)
			}
			for k := range s.Count {
				id := fmt.Sprintf("%s-%d", s.Pool, countPool(slots, s.Pool)+k)
				slots = append(slots, plannedSlot{Device: device.Device{ID: id, Pool: s.Pool, Runner: runner, Chips: 1, Healthy: true}})
			}
			continue
		}
		if !kind.Harness {
			return nil, usageErr("%s: Tenstorrent pool %s runs a harness (%v), not the built-in %s runner", key, s.Pool, harnessNames(), runner)
		}
		if len(s.Devices) == 0 || s.Count != 0 {
			return nil, usageErr("%s: Tenstorrent pool %s takes devices: [\"0\", ...], not count", key, s.Pool)
		}
		for _, d := range s.Devices {
			if n, err := strconv.Atoi(d); err != nil || n < 0 || strconv.Itoa(n) != d {
				return nil, usageErr("%s.devices: %q is not a device node number like \"0\"", key, d)
			}
		}
		root := wf.Discovery.DevRoot
		if root == "" {
			root = "/dev/tenstorrent"
		}
		dev := device.Device{ID: "tt" + s.Devices[0], Pool: s.Pool, Runner: runner, Chips: len(s.Devices),
			Path: filepath.Join(root, s.Devices[0]), Visible: strings.Join(s.Devices, ","), Healthy: true}
		if hasDevice(slots, dev.ID) {
			return nil, usageErr("%s: device %s is already a slot", key, dev.ID)
		}
		slots = append(slots, plannedSlot{Device: dev, Health: health, Sampler: sampler})
	}
	if wf.Discovery.Enabled {
		runner := wf.Discovery.Runner
		if runner == "" {
			runner = protocol.DefaultHarness
		}
		if k, ok := device.Lookup(runner); !ok || !k.Harness {
			return nil, usageErr("config discovery.runner %q: want one of %v", runner, harnessNames())
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
			slots = append(slots, plannedSlot{Device: d, Health: health, Sampler: sampler})
		}
	}
	return slots, nil
}

// buildSlots plans the slots and gives each its runner, one runner per kind
// shared by its slots. A harness's per-job and per-slot directories live
// under workDir/<runner>.
func buildSlots(ctx context.Context, wf *workerFile, slotsFlag, workDir string, log zerolog.Logger) ([]worker.Slot, error) {
	planned, err := planSlots(ctx, wf, slotsFlag, log)
	if err != nil {
		return nil, err
	}
	runners := map[string]device.Runner{}
	var slots []worker.Slot
	for _, p := range planned {
		name := p.Device.Runner
		r, ok := runners[name]
		if !ok {
			kind, _ := device.Lookup(name)
			var st device.Settings
			if kind.Harness {
				h, err := wf.harness(name)
				if err != nil {
					return nil, err
				}
				if h.Workdir == "" {
					key := "harnesses." + name + ".workdir"
					if name == protocol.RunnerForge {
						key = "forge.workdir"
					}
					return nil, usageErr("slot %s runs the %s harness: the config needs %s (the upstream checkout)", p.Device.ID, name, key)
				}
				st = device.Settings{Workdir: h.Workdir, Python: h.Python, Env: h.Env, TempDir: filepath.Join(workDir, name)}
			}
			if r, err = kind.New(st, log); err != nil {
				return nil, usageErr("config %s: %v", name, err)
			}
			runners[name] = r
		}
		slots = append(slots, worker.Slot{Device: p.Device, Runner: r, Health: p.Health, Sampler: p.Sampler})
	}
	return slots, nil
}

func harnessNames() []string {
	var out []string
	for _, k := range device.Kinds() {
		if k.Harness {
			out = append(out, k.Name)
		}
	}
	return out
}

func countPool(slots []plannedSlot, pool string) int {
	n := 0
	for _, s := range slots {
		if s.Device.Pool == pool {
			n++
		}
	}
	return n
}

func hasDevice(slots []plannedSlot, id string) bool {
	for _, s := range slots {
		if s.Device.ID == id {
			return true
		}
	}
	return false
}
