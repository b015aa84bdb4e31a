package harness

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
)

// envRoots are the directories of the harness's environment the sandbox
// binds read-only: the environment the interpreter is in (a venv's root,
// <root>/bin/python) and, when the interpreter is a link, the
// installation it points into.
func envRoots(python string) []string {
	var roots []string
	add := func(p string) {
		if filepath.Base(filepath.Dir(p)) == "bin" {
			roots = append(roots, filepath.Dir(filepath.Dir(p)))
		} else {
			roots = append(roots, filepath.Dir(p))
		}
	}
	add(python)
	if real, err := filepath.EvalSymlinks(python); err == nil && real != python {
		add(real)
	}
	return roots
}

// deviceNodes are the device nodes of dev's chips (its Path's directory,
// /dev/tenstorrent, with each of its Nodes): the only ones its job sees.
func deviceNodes(dev device.Device) []string {
	if dev.Path == "" {
		return nil
	}
	if len(dev.Nodes) == 0 {
		return []string{dev.Path}
	}
	dir := filepath.Dir(dev.Path)
	out := make([]string, 0, len(dev.Nodes))
	for _, n := range dev.Nodes {
		out = append(out, filepath.Join(dir, strconv.Itoa(n)))
	}
	return out
}

// limitError is the failure of a job that ran into its box's limits: its
// own doing (a fork bomb, a leak, a full disk), never the board's
// (*device.JobError, Limit the first limit hit: box.Hit's values are
// device's Limit names).
func limitError(hits []box.Hit, code int, sig syscall.Signal, sc *Scan) error {
	what := make([]string, 0, len(hits))
	for _, h := range hits {
		switch h {
		case box.HitPids:
			what = append(what, "its task limit (isolation.limits.pids)")
		case box.HitMemory:
			what = append(what, "its memory limit (isolation.limits.memory; the kernel killed a process)")
		case box.HitDisk:
			what = append(what, "a full room (isolation.limits.disk)")
		}
	}
	return device.JobFault(string(hits[0]), "the job ran into %s and ended with %s%s",
		strings.Join(what, " and "), exitText(code, sig), tailSuffix(sc.Tail()))
}

// secretWords mark an environment variable's name as a secret's.
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "API_KEY", "ACCESS_KEY"}

// SecretName reports whether an environment variable's name looks like a
// secret's (HF_TOKEN, AWS_SECRET_ACCESS_KEY, NATS_PASSWORD...) or is one of
// the worker's own (AWS_*, NATS_*): the worker config's env may not hand
// such a variable to the harness, which runs pull requests' code.
func SecretName(name string) bool {
	up := strings.ToUpper(name)
	if strings.HasPrefix(up, "AWS_") || strings.HasPrefix(up, "NATS_") || strings.HasSuffix(up, "_KEY") {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}
