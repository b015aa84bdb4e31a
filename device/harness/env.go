package harness

import (
	"sort"
	"strings"

	"github.com/benchfleet/benchfleet/device"
)

// The harness is the code under test: a pull request's code runs in it.
// It gets an allowlisted environment, never the worker's own (which holds
// NATS_PASSWORD, NATS_TOKEN, AWS_SECRET_ACCESS_KEY, creds paths...).
var (
	// envAllowed are passed through from the worker's environment as they are.
	envAllowed = map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
		"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true, "TMPDIR": true,
		"LD_LIBRARY_PATH": true, "VIRTUAL_ENV": true, "CONDA_PREFIX": true,
		// The upstream activate scripts export it (wormhole_b0, blackhole).
		"ARCH_NAME": true,
	}
	// envAllowedPrefixes are passed through by prefix: the locale,
	// Tenstorrent's runtime variables (TT_METAL_HOME, TT_LOGGER_LEVEL, ...)
	// and what the upstream activate scripts export (tt-forge-onnx's
	// env/activate: TTFORGE_*, TTMLIR_*; tt-xla's venv/activate: TTMLIR_*,
	// TTXLA_ENV_ACTIVATED).
	envAllowedPrefixes = []string{"LC_", "TT_", "TTFORGE_", "TTMLIR_", "TTXLA_"}
)

// EnvAllowed reports whether the worker's variable name reaches the harness.
func EnvAllowed(name string) bool {
	if envAllowed[name] {
		return true
	}
	for _, p := range envAllowedPrefixes {
		if strings.HasPrefix(name, p) && name != "TT_VISIBLE_DEVICES" {
			return true
		}
	}
	return false
}

// archNames are the ARCH_NAME values the upstream runtimes use.
var archNames = map[string]string{device.ArchWormhole: "wormhole_b0", device.ArchBlackhole: "blackhole"}

// Env builds the harness's environment: the allowlisted variables of the
// worker's environment (EnvAllowed), PYTHONUNBUFFERED=1, PYTHONPATH as the
// harness's activate script sets it (pythonPath, in order), ARCH_NAME from
// the board's arch unless the worker's environment has one, then the
// config's env (the operator's choice, which may override any of these; a
// PYTHONPATH there is appended after the harness's), then
// TT_VISIBLE_DEVICES. The result is sorted by name.
func Env(worker []string, config map[string]string, pythonPath []string, visible, arch string) []string {
	set := map[string]string{}
	for _, kv := range worker {
		k, v, ok := strings.Cut(kv, "=")
		if ok && EnvAllowed(k) {
			set[k] = v
		}
	}
	set["PYTHONUNBUFFERED"] = "1"
	path := strings.Join(pythonPath, ":")
	set["PYTHONPATH"] = path
	if _, ok := set["ARCH_NAME"]; !ok && archNames[arch] != "" {
		set["ARCH_NAME"] = archNames[arch]
	}
	for k, v := range config {
		if k == "PYTHONPATH" && v != "" && path != "" {
			v = path + ":" + v
		}
		set[k] = v
	}
	set["TT_VISIBLE_DEVICES"] = visible
	out := make([]string, 0, len(set))
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
