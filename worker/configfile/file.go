// Package configfile is the worker's config file (docs/OPERATIONS.md):
// the YAML `benchfleet worker --config` reads, decoded strictly, with its
// sections and their checks, and what it plans on a host: the slots
// (PlanSlots: devices with the name of their runner kind, through the
// device registry) and the devices and boxes `benchfleet devices` reports
// (ReportDevices). It starts no runner: worker.BuildSlots does, with the
// settings it gives (File.RunnerSettings). Its errors name the key or
// flag (*Error).
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/internal/yamlerr"
	"github.com/benchfleet/benchfleet/protocol"
)

// File is the worker's YAML config (docs/OPERATIONS.md): what
// `benchfleet worker --config` reads. Decoding is strict: an unknown key is
// an error naming it. PlanSlots and worker.BuildSlots turn it (and a
// --slots spec) into the worker's slots through the device registry; the runner kinds
// must be registered (the binary imports device/cpu, device/sim and
// device/harness).
type File struct {
	NATS      string        `yaml:"nats"`
	Store     string        `yaml:"store"`
	ID        string        `yaml:"id"`
	Slots     []SlotSpec    `yaml:"slots"`
	Discovery DiscoverySpec `yaml:"discovery"`
	// Forge is the forge harness's settings (the same as harnesses.forge).
	Forge *HarnessSpec `yaml:"forge"`
	// Harnesses holds each harness runner's settings by runner name
	// (forge, tt-xla, ...): a slot names its harness with `runner:`.
	Harnesses map[string]HarnessSpec `yaml:"harnesses"`
	Spool     string                 `yaml:"spool"`
	Timeouts  TimeoutsSpec           `yaml:"timeouts"`
	// MetricsListen is the address of /metrics and /healthz (e.g.
	// 0.0.0.0:9464); empty = not served.
	MetricsListen string `yaml:"metrics_listen"`
	// Notify is where quarantines and dead letters are told.
	Notify NotifySpec `yaml:"notify"`
	// Isolation is the box harness jobs run in (device/box).
	Isolation IsolationSpec `yaml:"isolation"`
	// Builds is where the builds jobs name (source.wheels) are made and
	// cached (device/build).
	Builds BuildsSpec `yaml:"builds"`
}

// BuildsSpec is the worker config's builds: section: the host's cache of
// the builds harness jobs name (their commit's test tree and an
// environment with their wheels).
type BuildsSpec struct {
	// CacheDir holds the cache; default $CACHE_DIRECTORY/builds under
	// systemd (the shipped unit's /var/cache/benchfleet), else
	// <work dir>/builds. It must be the worker's, in directories no other
	// user can replace.
	CacheDir string `yaml:"cache_dir"`
	// MaxBytes bounds it (e.g. 50GiB; least recently used builds go
	// first, a build in use never); default unbounded.
	MaxBytes string `yaml:"max_bytes"`
	// Repos maps a job's source.repo (e.g. tenstorrent/tt-forge-onnx) to
	// a git URL or a local mirror its test trees are fetched from; a job
	// of another repo is invalid here.
	Repos map[string]string `yaml:"repos"`
	// FetchTimeout is how long the store has to answer a wheel's fetch
	// and, while it streams, to send its next bytes (e.g. 30s, the
	// default: build.DefaultFetchTimeout); FetchPerMiB what each MiB of
	// a wheel adds to the fetch's whole deadline (default 1s). A store
	// past either is taken for down: the job goes back to the queue
	// without using a delivery.
	FetchTimeout string `yaml:"fetch_timeout"`
	FetchPerMiB  string `yaml:"fetch_per_mib"`
}

// FetchDeadlines returns FetchTimeout and FetchPerMiB (0 when not set:
// the cache's defaults).
func (b BuildsSpec) FetchDeadlines() (timeout, perMiB time.Duration, err error) {
	for _, f := range []struct {
		key, v string
		d      *time.Duration
	}{{"fetch_timeout", b.FetchTimeout, &timeout}, {"fetch_per_mib", b.FetchPerMiB, &perMiB}} {
		if f.v == "" {
			continue
		}
		if *f.d, err = time.ParseDuration(f.v); err != nil || *f.d <= 0 {
			return 0, 0, configErr("config builds.%s %q: want a positive duration like 30s", f.key, f.v)
		}
	}
	return timeout, perMiB, nil
}

// Limits returns the cache directory (under workDir by default) and its
// byte bound (0 = none).
func (b BuildsSpec) Limits(workDir string) (dir string, maxBytes int64, err error) {
	dir = b.CacheDir
	if dir == "" {
		// systemd's CacheDirectory= (the shipped unit's
		// /var/cache/benchfleet) outlives PrivateTmp's /tmp.
		if cd := os.Getenv("CACHE_DIRECTORY"); cd != "" && filepath.IsAbs(cd) {
			workDir = strings.SplitN(cd, ":", 2)[0]
		}
		dir = filepath.Join(workDir, "builds")
	}
	if b.MaxBytes != "" {
		if maxBytes, err = ParseBytes(b.MaxBytes); err != nil || maxBytes <= 0 {
			return "", 0, configErr("config builds.max_bytes %q: want a size like 50GiB or 500MB", b.MaxBytes)
		}
	}
	for repo, src := range b.Repos {
		if repo == "" || src == "" {
			return "", 0, configErr("config builds.repos: %q: %q: want source.repo: <git URL or mirror path>", repo, src)
		}
	}
	return dir, maxBytes, nil
}

// ParseBytes reads a size: a number of bytes, or with a unit B, KB, MB,
// GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, unit)
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v * mult), nil
}

// IsolationSpec is the worker config's isolation: section: the box every
// harness job runs in (device/box).
type IsolationSpec struct {
	// User is the job user: "" = a uid of its own per job (isolation.uids)
	// when the worker runs as root (the worker's own user otherwise: the
	// uid wall is down), "none" = the worker's own user deliberately (a
	// container per job, say), or NAME, UID or UID:GID (one user every job
	// shares: the uid wall is down by choice).
	User string `yaml:"user"`
	// Cgroup is how a job's processes are killed when it ends: "auto"
	// (default: a cgroup v2 per job where the worker may make one, else
	// the worker as subreaper), "on" (a cgroup or the worker does not
	// start) or "off".
	Cgroup string `yaml:"cgroup"`
	// Groups are supplementary groups of the job user, by name or gid
	// (e.g. [tenstorrent] where udev gives the device nodes to that group
	// with mode 0660); default none.
	Groups []string `yaml:"groups"`
	// Sandbox is the tool that walls each job in: "bwrap" (default:
	// bubblewrap) or "none".
	Sandbox string `yaml:"sandbox"`
	// Bwrap is the bubblewrap binary (default "bwrap" in PATH).
	Bwrap string `yaml:"bwrap"`
	// Walls is "require" (default: the worker does not start when a wall
	// cannot be built) or "warn".
	Walls string `yaml:"walls"`
	// UIDs is the range of uids jobs run as, one per running job,
	// "FIRST-LAST" (default box.DefaultUIDs).
	UIDs string `yaml:"uids"`
	// Network is "none" (default) or "host" (the job shares the host's
	// network; said at start).
	Network string `yaml:"network"`
	// Warm is "on" (default: the next job's sandbox is built while the
	// slot's job runs, so it starts at once) or "off" (each job's sandbox
	// is built at its start: 15-25 ms more per job).
	Warm string `yaml:"warm"`
	// ReadOnly are host paths bound read-only into every job's sandbox.
	ReadOnly []string `yaml:"read_only"`
	// Writable are host directories every job's sandbox may write: a hole
	// in the walls shared by every job (tests, debugging), logged at start.
	Writable []string `yaml:"writable"`
	// Limits bound each job (sizes like 16GiB; -1 turns one off).
	Limits LimitsSpec `yaml:"limits"`
}

// harnessBox is the box harness h's jobs run in: the isolation section,
// with the harness's own network if it names one.
func (wf *File) harnessBox(h HarnessSpec) (box.Config, error) {
	c, err := wf.Isolation.Box()
	if err == nil && h.Isolation.Network != "" {
		c.Network = h.Isolation.Network
	}
	return c, err
}

// checkIsolation checks the isolation section and every harness's own,
// whatever slots the host serves, naming the key.
func (wf *File) checkIsolation() error {
	c, err := wf.Isolation.Box()
	if err != nil {
		return err
	}
	if err := c.Check(); err != nil {
		return configErr("config isolation.%v", err)
	}
	hs := map[string]HarnessSpec{}
	for name, h := range wf.Harnesses {
		hs["harnesses."+name] = h
	}
	if wf.Forge != nil {
		hs["forge"] = *wf.Forge
	}
	for key, h := range hs {
		if n := h.Isolation.Network; n != "" && n != box.NetworkNone && n != box.NetworkHost {
			return configErr("config %s.isolation.network %q is not one of none, host", key, n)
		}
	}
	return nil
}

// LimitsSpec is isolation.limits: each job's cgroup and room bounds.
type LimitsSpec struct {
	// Pids is pids.max (default box.DefaultPids).
	Pids int64 `yaml:"pids"`
	// Memory is memory.max, a size (default 80% of the host's memory).
	Memory string `yaml:"memory"`
	// CPUWeight is cpu.weight, 1 to 10000 (default 100).
	CPUWeight int64 `yaml:"cpu_weight"`
	// Disk is the size of the job's room, /tmp and /dev/shm (default 8GiB).
	Disk string `yaml:"disk"`
}

// Box is the box.Config of this isolation section (Root and Log are the
// runner's). Errors name the key.
func (s IsolationSpec) Box() (box.Config, error) {
	c := box.Config{User: s.User, Cgroup: s.Cgroup, Groups: s.Groups, Sandbox: s.Sandbox, Bwrap: s.Bwrap,
		Walls: s.Walls, UIDs: s.UIDs, Network: s.Network, ReadOnly: s.ReadOnly, Writable: s.Writable,
		Limits: box.Limits{Pids: s.Limits.Pids, CPUWeight: s.Limits.CPUWeight}, Warm: s.Warm}
	if c.Warm == "" {
		c.Warm = box.WarmOn
	}
	size := func(key, v string) (int64, error) {
		switch v {
		case "":
			return 0, nil
		case "-1":
			return -1, nil
		}
		n, err := ParseBytes(v)
		if err != nil {
			return 0, configErr("config isolation.limits.%s: %v", key, err)
		}
		return n, nil
	}
	var err error
	if c.Limits.Memory, err = size("memory", s.Limits.Memory); err != nil {
		return c, err
	}
	if c.Limits.Disk, err = size("disk", s.Limits.Disk); err != nil {
		return c, err
	}
	return c, nil
}

// JobUser describes the user harness jobs run as under this config.
func (wf *File) JobUser() (string, error) {
	var spec string
	if wf != nil {
		spec = wf.Isolation.User
	}
	d, err := box.JobUser(spec)
	if err != nil {
		return "", configErr("config isolation.user: %v", err)
	}
	return d, nil
}

// NotifySpec is the worker config's notify: section.
type NotifySpec struct {
	// URL receives a JSON POST (Slack/Mattermost compatible text) when a
	// device is quarantined or a job is dead-lettered; empty = none.
	URL string `yaml:"url"`
}

type SlotSpec struct {
	Pool    string   `yaml:"pool"`
	Runner  string   `yaml:"runner"`
	Devices []string `yaml:"devices"`
	Count   int      `yaml:"count"`
}

type DiscoverySpec struct {
	Enabled bool   `yaml:"enabled"`
	TTSMI   string `yaml:"tt_smi"`
	DevRoot string `yaml:"dev_root"`
	SysRoot string `yaml:"sysfs_root"`
	// Runner is the harness discovered boards run (default forge).
	Runner string `yaml:"runner"`
}

type TimeoutsSpec struct {
	Job string `yaml:"job"`
	// JobMax bounds every attempt, whatever timeout the job asks for
	// (Config.MaxJobTimeout; default 6h).
	JobMax string `yaml:"job_max"`
	Drain  string `yaml:"drain"`
}

// MaxJob is timeouts.job_max (0 when unset).
func (t TimeoutsSpec) MaxJob() (time.Duration, error) {
	if t.JobMax == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(t.JobMax)
	if err != nil || d <= 0 {
		return 0, configErr("config timeouts.job_max %q: want a positive duration like 6h", t.JobMax)
	}
	return d, nil
}

type HarnessSpec struct {
	Workdir string            `yaml:"workdir"`
	Python  string            `yaml:"python"`
	Env     map[string]string `yaml:"env"`
	// HealthProbe is a known-good test id run to confirm a host fault
	// before the host leaves service (device.Settings.HealthProbe).
	HealthProbe string `yaml:"health_probe"`
	// Isolation is this harness's own choice of the box's network:
	// isolation: {network: host} lets its jobs use the host's network
	// (an opt-in, logged at start); default the top-level isolation's.
	Isolation HarnessIsolation `yaml:"isolation"`
}

// HarnessIsolation is a harness's isolation: section.
type HarnessIsolation struct {
	// Network is "none" or "host"; "" = the top-level isolation.network.
	Network string `yaml:"network"`
}

// Load reads the config file at path and checks its isolation sections.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, configErr("--config: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var wf File
	if err := dec.Decode(&wf); err != nil && !errors.Is(err, io.EOF) {
		return nil, configErr("--config %s: %v", path, yamlerr.CleanSource(data, err))
	}
	if err := wf.checkIsolation(); err != nil {
		return nil, err
	}
	return &wf, nil
}

func (t TimeoutsSpec) Durations() (job, drain time.Duration, err error) {
	if t.Job != "" {
		if job, err = time.ParseDuration(t.Job); err != nil || job <= 0 {
			return 0, 0, configErr("config timeouts.job %q: want a positive duration like 30m", t.Job)
		}
	}
	if t.Drain != "" {
		if drain, err = time.ParseDuration(t.Drain); err != nil || drain <= 0 {
			return 0, 0, configErr("config timeouts.drain %q: want a positive duration like 10m", t.Drain)
		}
	}
	return job, drain, nil
}

// harness returns the settings of the harness runner name: harnesses.<name>,
// or the forge: section for forge (giving both is an error).
func (wf *File) harness(name string) (HarnessSpec, error) {
	if wf == nil {
		return HarnessSpec{}, nil
	}
	h, ok := wf.Harnesses[name]
	if name == protocol.RunnerForge && wf.Forge != nil {
		if ok {
			return h, configErr("config: give the forge harness's settings once, in forge: or in harnesses.forge, not both")
		}
		h = *wf.Forge
	}
	return h, nil
}

// Error is a bad worker config or slot spec: the message names the key or
// flag and what is wrong. Callers treat it as a usage error.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func configErr(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}
