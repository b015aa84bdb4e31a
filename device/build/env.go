package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// MaxWheelBytes bounds one wheel the cache downloads.
const MaxWheelBytes = 4 << 30

// interp is a base interpreter as the cache sees it: what an environment
// made over it depends on.
type interp struct {
	// Executable is the interpreter's program, symbolic links resolved.
	Executable string `json:"executable"`
	// Prefix is its sys.prefix (a venv's directory for a venv's python).
	Prefix   string `json:"prefix"`
	Version  string `json:"version"`
	CacheTag string `json:"cache_tag"`
	// Site are its site-packages directories (site.getsitepackages()), in
	// order: an environment made over it sees them after its own.
	Site []string `json:"site"`
	// Pip is whether it can import pip: then an environment over it needs
	// no pip of its own.
	Pip bool `json:"pip"`
}

const probeScript = `import importlib.util, json, os, site, sys
print(json.dumps({"executable": os.path.realpath(sys.executable), "prefix": sys.prefix,
    "version": sys.version, "cache_tag": sys.implementation.cache_tag,
    "site": site.getsitepackages(), "pip": importlib.util.find_spec("pip") is not None}))`

// probed is a cached probe of an interpreter, valid while its files are
// the same.
type probed struct {
	stamp string
	in    *interp
}

// interpreter probes the base interpreter python (once while its program
// and its pyvenv.cfg stay the same).
func (c *Cache) interpreter(ctx context.Context, python string) (*interp, error) {
	if !filepath.IsAbs(python) {
		return nil, device.HostFault("the harness's interpreter %q is not an absolute path: the build cache makes environments over an absolute one", python)
	}
	stamp := fileStamp(python) + "|" + fileStamp(filepath.Join(filepath.Dir(filepath.Dir(python)), "pyvenv.cfg"))
	c.mu.Lock()
	p, ok := c.probes[python]
	c.mu.Unlock()
	if ok && p.stamp == stamp {
		return p.in, nil
	}
	var out bytes.Buffer
	tail, err := c.run(ctx, tool{env: c.pythonEnv(), path: python, args: []string{"-I", "-c", probeScript}, stdout: &out, log: io.Discard})
	if err != nil {
		if ctxErr(err) {
			return nil, err
		}
		return nil, device.HostFault("the harness's interpreter %s cannot run (%s): %s", python, exitText(err), lastLines(tail, 3))
	}
	in := &interp{}
	if err := json.Unmarshal(out.Bytes(), in); err != nil || in.Executable == "" || in.Version == "" {
		return nil, device.HostFault("the harness's interpreter %s does not describe itself (%v): %s", python, err, lastLines(out.String(), 3))
	}
	c.mu.Lock()
	c.probes[python] = probed{stamp: stamp, in: in}
	c.mu.Unlock()
	return in, nil
}

// fileStamp identifies the content of path without reading it.
func fileStamp(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return "-"
	}
	stamp := fmt.Sprintf("%d/%d", info.Size(), info.ModTime().UnixNano())
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		stamp += fmt.Sprintf("/%d/%d", st.Dev, st.Ino)
	}
	return stamp
}

// envRel is the entry of the environment of wheels (sorted by name) over
// base.
func envRel(base *interp, wheels []protocol.Wheel) string {
	h := sha256.New()
	field := func(h hash.Hash, s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	field(h, "benchfleet build env v1")
	field(h, base.Executable)
	field(h, base.Prefix)
	field(h, base.Version)
	field(h, base.CacheTag)
	field(h, strings.Join(base.Site, "\x00"))
	for _, w := range wheels {
		field(h, w.SHA256+" "+w.Name())
	}
	return dirEnvs + "/" + hex.EncodeToString(h.Sum(nil))[:32]
}

// wheelRel is the entry holding the wheel w (its file w.Name() inside).
func wheelRel(w protocol.Wheel) string { return dirWheels + "/" + shortHash(w.URL, 32) }

// fetchWheels makes sure the cache holds every wheel, verified, and
// returns their paths, leased until release is called.
func (c *Cache) fetchWheels(ctx context.Context, wheels []protocol.Wheel, log io.Writer) (paths []string, release func(), err error) {
	var held []*entry
	release = func() {
		for _, e := range held {
			c.release(e)
		}
	}
	for _, w := range wheels {
		e, _, err := c.ensure(ctx, wheelRel(w), func(tmp, _ string) error { return c.fetchWheel(ctx, w, tmp, log) })
		if err != nil {
			release()
			return nil, nil, err
		}
		held = append(held, e)
		paths = append(paths, filepath.Join(c.path(e.rel), w.Name()))
	}
	return paths, release, nil
}

// fetchWheel downloads w from the store into dir, verifying its sha256
// as it streams. The fetch has deadlines of its own (fetchGuard), whatever
// ctx allows: a store that does not answer in time, or fails, is a
// *device.StoreError (unless the store is asked for a wheel it says it
// does not have, which is the job's fault), not a stall of the job.
func (c *Cache) fetchWheel(ctx context.Context, w protocol.Wheel, dir string, log io.Writer) error {
	logf(log, "fetching wheel %s from the store", w.Name())
	gctx, guard := guardFetch(ctx, c.fetchTimeout, c.fetchPerMiB)
	defer guard.stop()
	// storeErr is the error of a fetch that failed on the store's side.
	storeErr := func(err error) error {
		if why := guard.ended(gctx); why != "" && ctx.Err() == nil {
			// Not wrapped: a ctx error in the chain would make the
			// slots waiting for this wheel each try again in turn.
			return device.StoreDown("fetch wheel %s: %s", w.Name(), why)
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if c.unavailable(err) {
			return &device.StoreError{Err: fmt.Errorf("fetch wheel %s: %w", w.Name(), err)}
		}
		return fmt.Errorf("build: fetch wheel %s from the store: %w", w.Name(), err)
	}
	rc, err := c.fetchFn(gctx, w.URL)
	if err != nil {
		if c.notFound(err) {
			return device.Invalid("wheel %s is not in the store at %s", w.Name(), w.URL)
		}
		return storeErr(err)
	}
	defer rc.Close()
	f, err := os.OpenFile(filepath.Join(dir, w.Name()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return c.hostIO("write wheel "+w.Name(), err)
	}
	defer f.Close()
	h := sha256.New()
	fw := &errWriter{w: f}
	n, err := io.Copy(io.MultiWriter(fw, h), guard.reader(io.LimitReader(rc, MaxWheelBytes+1)))
	switch {
	case fw.err != nil:
		return c.hostIO("write wheel "+w.Name(), fw.err)
	case err != nil:
		return storeErr(err)
	case n > MaxWheelBytes:
		return device.Invalid("wheel %s at %s is larger than %d bytes", w.Name(), w.URL, int64(MaxWheelBytes))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != w.SHA256 {
		return device.Invalid("wheel %s at %s has sha256 %s, but the job names sha256 %s", w.Name(), w.URL, got, w.SHA256)
	}
	if err := f.Close(); err != nil {
		return c.hostIO("write wheel "+w.Name(), err)
	}
	logf(log, "fetched wheel %s (%d bytes, sha256 verified)", w.Name(), n)
	return nil
}

// errWriter keeps the error of its writer, so a full disk is told apart
// from a store that fails mid-stream.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// basePth is the file in an environment's site-packages that adds its
// base interpreter's site-packages after its own.
const basePth = "_benchfleet_base.pth"

// makeEnv makes in tmp an environment over the base interpreter python
// holding the wheels at paths, for use at final.
//
// The environment is a venv without system site-packages whose
// site-packages holds the wheels and a .pth adding every site-packages
// directory of the base, in the base's order: it sees what the base sees
// (a venv's packages too, which a venv made with --system-site-packages
// over a venv's python does not), with the wheels first. When the base
// can import pip, that pip installs the wheels and the environment gets
// none of its own; otherwise venv installs one (ensurepip).
func (c *Cache) makeEnv(ctx context.Context, python string, base *interp, paths, names []string, tmp, final string, log io.Writer) error {
	version, _, _ := strings.Cut(strings.TrimSpace(base.Version), " ")
	logf(log, "making an environment over %s (Python %s) with %s", python, version, strings.Join(names, ", "))
	env := c.pythonEnv()
	args := []string{"-I", "-m", "venv"}
	if base.Pip {
		args = append(args, "--without-pip")
	}
	tail, err := c.run(ctx, tool{env: env, path: python, args: append(args, tmp), log: log})
	if err != nil {
		switch {
		case ctxErr(err):
			return err
		case noSpace(err, tail):
			return device.HostFault("the build cache %s is out of space: %s -m venv: %s", c.dir, python, lastLines(tail, 3))
		}
		return device.HostFault("%s -m venv cannot make an environment (%s): %s (on Debian the python3-venv package provides venv and ensurepip)", python, exitText(err), lastLines(tail, 3))
	}
	py := filepath.Join(tmp, "bin", "python")
	var out bytes.Buffer
	tail, err = c.run(ctx, tool{env: env, path: py, args: []string{"-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"}, stdout: &out, log: log})
	if err != nil {
		if ctxErr(err) {
			return err
		}
		return device.HostFault("the environment %s made with %s -m venv cannot run (%s): %s", tmp, python, exitText(err), lastLines(tail, 3))
	}
	purelib := strings.TrimSpace(out.String())
	if rel, err := filepath.Rel(tmp, purelib); err != nil || !filepath.IsLocal(rel) {
		return device.HostFault("the environment %s made with %s -m venv has its site-packages at %q, outside it", tmp, python, purelib)
	}
	if err := os.WriteFile(filepath.Join(purelib, basePth), []byte(pthLine(base.Site)), 0o644); err != nil {
		return c.hostIO("write "+basePth, err)
	}
	logf(log, "pip install --no-deps --no-index %s", strings.Join(names, " "))
	pipArgs := append([]string{"-I", "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir",
		"--disable-pip-version-check", "--ignore-installed", "--no-warn-script-location"}, paths...)
	tail, err = c.run(ctx, tool{env: env, path: py, args: pipArgs, log: log})
	if err != nil {
		switch {
		case ctxErr(err):
			return err
		case noSpace(err, tail):
			return device.HostFault("the build cache %s is out of space: pip install: %s", c.dir, lastLines(tail, 3))
		case strings.Contains(tail, "No module named pip"), missingProgram(err):
			return device.HostFault("the environment over %s has no pip (%s): %s", python, exitText(err), lastLines(tail, 3))
		}
		return device.Failed("the job's build failed: pip install %s: %s", strings.Join(names, " "), lastLines(tail, 5))
	}
	if err := relocate(tmp, final); err != nil {
		return c.hostIO("relocate the environment", err)
	}
	return nil
}

// pthLine is a .pth line adding the site-packages directories dirs (those
// that exist when the interpreter starts) to sys.path, each processed as
// a site directory (its own .pth files run). A directory whose name is
// not UTF-8 cannot be written as a Python literal here and is left out.
func pthLine(dirs []string) string {
	var lits []string
	for _, d := range dirs {
		if utf8.ValidString(d) {
			lits = append(lits, strconv.QuoteToASCII(d))
		}
	}
	return "import os, site; list(map(site.addsitedir, filter(os.path.isdir, [" + strings.Join(lits, ", ") + "])))\n"
}

// relocate rewrites the absolute paths venv and pip wrote into an
// environment made at tmp for its final place: the scripts in bin/ (their
// #! lines, the activate scripts) and pyvenv.cfg's command. The
// interpreter finds its environment from where it is run, so nothing else
// needs it.
func relocate(tmp, final string) error {
	old, repl := []byte(tmp), []byte(final)
	files := []string{filepath.Join(tmp, "pyvenv.cfg")}
	bins, err := os.ReadDir(filepath.Join(tmp, "bin"))
	if err != nil {
		return err
	}
	for _, d := range bins {
		if d.Type().IsRegular() {
			files = append(files, filepath.Join(tmp, "bin", d.Name()))
		}
	}
	for _, p := range files {
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() || info.Size() > 1<<20 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, old) {
			continue
		}
		if err := os.WriteFile(p, bytes.ReplaceAll(data, old, repl), info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
