package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/redact"
)

// tool is one run of a program the cache uses (git, python, pip).
type tool struct {
	// env is the program's whole environment: never the worker's.
	env  []string
	path string
	args []string
	// dir is the working directory ("" = the cache's tmp).
	dir string
	// stdout receives the program's standard output; nil sends it to log
	// with its standard error.
	stdout io.Writer
	// log receives its output as it runs.
	log io.Writer
}

// toolTail is how much of a program's output its error keeps.
const toolTail = 8 << 10

// run runs t under ctx and returns the tail of what it wrote (standard
// error, and standard output unless t.stdout takes it). The error is
// ctx's when ctx ended it, otherwise exec's (*exec.ExitError,
// exec.ErrNotFound, ...).
func (c *Cache) run(ctx context.Context, t tool) (string, error) {
	cmd := exec.CommandContext(ctx, t.path, t.args...)
	cmd.Env = t.env
	cmd.Dir = t.dir
	if cmd.Dir == "" {
		cmd.Dir = c.path(dirTmp)
	}
	tail := &tailBuffer{max: toolTail}
	out := io.MultiWriter(t.log, tail)
	cmd.Stdout, cmd.Stderr = out, out
	if t.stdout != nil {
		cmd.Stdout = t.stdout
	}
	detach(cmd)
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		return tail.String(), context.Cause(ctx)
	}
	return tail.String(), err
}

// baseEnv is what every program the cache runs gets: a PATH, HOME and
// TMPDIR inside the cache, and the C locale (so "No space left on device"
// reads the same everywhere).
func (c *Cache) baseEnv() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{"PATH=" + path, "HOME=" + c.path(dirHome), "TMPDIR=" + c.path(dirTmp), "LC_ALL=C"}
}

// gitPassEnv are the worker's variables git gets: how this host reaches
// the network (proxies) and an ssh agent. Nothing else of the worker's
// environment (no GIT_*, no credentials of the worker) reaches git.
var gitPassEnv = []string{
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SSH_AUTH_SOCK",
}

// gitEnv is git's environment. system is whether git reads the host's
// /etc/gitconfig (how the operator gives it credentials and proxies):
// fetches do, making a tree does not (no filter drivers run on it).
func (c *Cache) gitEnv(system bool) []string {
	env := append(c.baseEnv(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL=/dev/null")
	if !system {
		env = append(env, "GIT_CONFIG_NOSYSTEM=1")
	}
	for _, k := range gitPassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// gitConfig is given to every git command: no hooks, no fsmonitor, no
// background maintenance outliving the command, local repositories
// allowed as remotes.
var gitConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "protocol.file.allow=always",
	"-c", "gc.autoDetach=false",
	"-c", "maintenance.autoDetach=false",
}

// git runs git with args in dir (a mirror).
func (c *Cache) git(ctx context.Context, log io.Writer, system bool, stdout io.Writer, dir string, args ...string) (string, error) {
	return c.run(ctx, tool{
		env: c.gitEnv(system), path: c.gitPath,
		args: append(append([]string{}, gitConfig...), args...),
		dir:  dir, stdout: stdout, log: log,
	})
}

// remote is the name the repository a fetch reads from has: its URL is
// given to git in its environment (remoteEnv), never in its arguments,
// which every user of the host can read in /proc, nor in the mirror's
// config on disk.
const remote = "origin"

// gitRemote runs git with args in the mirror dir, with the remote named
// remote at url.
func (c *Cache) gitRemote(ctx context.Context, log io.Writer, dir, url string, args ...string) (string, error) {
	return c.run(ctx, tool{
		env:  append(c.gitEnv(true), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote."+remote+".url", "GIT_CONFIG_VALUE_0="+url),
		path: c.gitPath, args: append(append([]string{}, gitConfig...), args...), dir: dir, log: log,
	})
}

// pythonEnv is the environment of python and pip: no configuration file,
// no prompt, no version check, no user site.
func (c *Cache) pythonEnv() []string {
	return append(c.baseEnv(),
		"PIP_CONFIG_FILE=/dev/null", "PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_ROOT_USER_ACTION=ignore", "PYTHONNOUSERSITE=1")
}

// noSpace reports whether err or a program's output says the disk or the
// quota is full.
func noSpace(err error, output string) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(output, "No space left on device") || strings.Contains(output, "Disk quota exceeded")
}

// missingProgram reports whether err is of a program that is not
// installed (not on PATH, or no file at its path).
func missingProgram(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}

// hostIO is the error of a local file operation of the cache: the host
// cannot make builds (its disk is full, its cache directory broken).
func (c *Cache) hostIO(what string, err error) error {
	if noSpace(err, "") {
		return device.HostFault("the build cache %s is out of space: %s: %v", c.dir, what, err)
	}
	return device.HostFault("the build cache %s: %s: %v", c.dir, what, err)
}

// ctxErr reports whether err is a context's end (the caller cancelled or
// timed out), which is never the build's fault.
func ctxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lastLines is the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append(keep, l)
		}
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	if len(keep) == 0 {
		return "(no output)"
	}
	return strings.Join(keep, " | ")
}

// gitLines is what git said went wrong: its fatal and error lines, or
// else its last lines.
func gitLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return lastLines(s, 4)
	}
	return lastLines(strings.Join(keep, "\n"), 3)
}

// exitText describes how a program ended for an error message.
func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// redactWriter hides secrets (a repository URL's user info) in the lines
// written through it. Lines are passed on whole; Flush writes a last
// unterminated one.
type redactWriter struct {
	w       io.Writer
	secrets []string
	buf     []byte
}

// redacting returns w, or w behind a redactWriter when url holds user
// info; flush writes what is left.
func redacting(w io.Writer, url string) (out io.Writer, flush func()) {
	secrets := redact.Secrets(url)
	if len(secrets) == 0 {
		return w, func() {}
	}
	rw := &redactWriter{w: w, secrets: secrets}
	return rw, rw.Flush
}

func (r *redactWriter) Write(p []byte) (int, error) {
	r.buf = append(r.buf, p...)
	if i := bytes.LastIndexAny(r.buf, "\n\r"); i >= 0 {
		r.emit(r.buf[:i+1])
		r.buf = append(r.buf[:0], r.buf[i+1:]...)
	}
	return len(p), nil
}

func (r *redactWriter) Flush() {
	if len(r.buf) > 0 {
		r.emit(r.buf)
		r.buf = r.buf[:0]
	}
}

func (r *redactWriter) emit(b []byte) {
	s := string(b)
	for _, sec := range r.secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, redact.Mark)
		}
	}
	_, _ = io.WriteString(r.w, s)
}

// hide removes url's secrets from s (an error message holding git's output).
func hide(s, url string) string {
	for _, sec := range redact.Secrets(url) {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, redact.Mark)
		}
	}
	return s
}

// logf writes one line of the cache's own to a job's log.
func logf(log io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(log, "build: "+format+"\n", args...)
}
