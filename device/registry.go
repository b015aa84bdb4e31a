package device

import (
	"fmt"
	"github.com/benchfleet/benchfleet/device/box"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
)

// Kind describes one kind of runner: a built-in engine (cpu, sim) or an
// upstream harness (forge, tt-xla). Every runner package registers its kinds
// with Register in an init function, as database/sql drivers do, so the
// worker config, discovery, submit's checks and the docs all read one list
// instead of switching on names.
type Kind struct {
	// Name is what jobs ask for in "runner" (protocol.ValidRunnerName).
	Name string
	// Builtin kinds need no hardware and no settings: they serve the pool of
	// their own name (cpu, sim) and their slots come from --slots.
	Builtin bool
	// Harness kinds run an upstream checkout and need Settings.Workdir; they
	// serve Tenstorrent pools.
	Harness bool
	// Summary is one line for --help and docs.
	Summary string
	// Check validates what can be checked without a host (submit time); the
	// runner's own Check calls it too. nil accepts everything. It returns an
	// *InvalidError or nil.
	Check func(b protocol.Benchmark) error
	// New builds a runner. Builtin kinds get zero Settings.
	New func(s Settings, log zerolog.Logger) (Runner, error)
}

// Settings configure a harness runner on one host (worker config
// `harnesses.<name>`; `forge:` is the forge harness's).
type Settings struct {
	// Workdir is the upstream checkout (required for harness kinds).
	Workdir string
	// Python is the interpreter of the harness's environment (default python3).
	Python string
	// Env is added to the harness's allowlisted environment.
	Env map[string]string
	// TempDir holds per-job and per-slot directories; created if missing.
	TempDir string
	// HealthProbe is a known-good test id of the harness, run to confirm
	// a host fault before the host leaves service ("" = none: the board
	// check stands in).
	HealthProbe string
	// Box is the sandbox a harness's jobs run in (device/box): the job
	// user (a uid of its own per job under a root worker), the walls, the
	// network and the limits; zero values take box's defaults.
	Box box.Config
	// Builds provisions the build a job names (its wheels and its
	// commit's test tree); nil = jobs that name wheels are invalid here.
	Builds Provisioner
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Kind{}
)

// Register adds a runner kind. It panics on a duplicate or invalid name:
// registration happens at init, from code, never from user input.
func Register(k Kind) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if !protocol.ValidRunnerName(k.Name) || k.New == nil {
		panic(fmt.Sprintf("device: Register: bad kind %q", k.Name))
	}
	if _, dup := registry[k.Name]; dup {
		panic(fmt.Sprintf("device: Register: kind %q registered twice", k.Name))
	}
	registry[k.Name] = k
}

// Lookup returns the registered kind called name.
func Lookup(name string) (Kind, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	k, ok := registry[name]
	return k, ok
}

// Kinds returns every registered kind, sorted by name.
func Kinds() []Kind {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Kind, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KindNames returns the registered names, sorted.
func KindNames() []string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return names
}

// CheckJob checks a job against its runner kind without a host: the kind
// must be registered, a built-in kind must serve the job's pool, a harness
// kind a Tenstorrent pool, and the kind's Check must pass. Errors are
// *InvalidError.
func CheckJob(j *protocol.Job) error {
	k, ok := Lookup(j.Runner)
	if !ok {
		return Invalid("runner %q is not known (known: %v)", j.Runner, KindNames())
	}
	switch {
	case k.Builtin && j.Pool != k.Name:
		return Invalid("runner %s serves only pool %s, not %s", k.Name, k.Name, j.Pool)
	case k.Harness && protocol.IsBuiltinPool(j.Pool):
		return Invalid("runner %s runs on Tenstorrent pools, not %s", k.Name, j.Pool)
	}
	if err := k.CheckWheels(j); err != nil {
		return err
	}
	if k.Check != nil {
		return k.Check(j.Benchmark)
	}
	return nil
}

// CheckWheels refuses a job that names wheels for a kind that installs
// none (a built-in runner runs its own code): *InvalidError or nil.
func (k Kind) CheckWheels(j *protocol.Job) error {
	if !k.Harness && len(j.Source.Wheels) > 0 {
		return Invalid("source.wheels: the %s runner runs its own built-in code and installs no wheels (wheels are for the harness runners: %v)", k.Name, HarnessNames())
	}
	return nil
}

// HarnessNames lists the registered harness kinds.
func HarnessNames() []string {
	var out []string
	for _, k := range Kinds() {
		if k.Harness {
			out = append(out, k.Name)
		}
	}
	return out
}
