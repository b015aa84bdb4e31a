package harness

import (
	"sort"
	"strings"
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
	}
	// envAllowedPrefixes are passed through by prefix: the locale and
	// Tenstorrent's own variables (TT_METAL_HOME, TT_LOGGER_LEVEL, ...).
	envAllowedPrefixes = []string{"LC_", "TT_"}
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

// Env builds the harness's environment: the allowlisted variables of the
// worker's environment (EnvAllowed), PYTHONUNBUFFERED=1 and
// PYTHONPATH=<workdir> (a test id resolves in the checkout although the
// working directory is the slot's own), then the config's env (the
// operator's choice, which may override any of these; a PYTHONPATH there is
// appended after the checkout), then TT_VISIBLE_DEVICES. The result is
// sorted by name.
func Env(worker []string, config map[string]string, workdir, visible string) []string {
	set := map[string]string{}
	for _, kv := range worker {
		k, v, ok := strings.Cut(kv, "=")
		if ok && EnvAllowed(k) {
			set[k] = v
		}
	}
	set["PYTHONUNBUFFERED"] = "1"
	set["PYTHONPATH"] = workdir
	for k, v := range config {
		if k == "PYTHONPATH" && v != "" {
			v = workdir + ":" + v
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
