//go:build unix

// Package clitest is the kit for tests that drive benchfleet as a user
// does: the real binary, built once per test process (Binary), other Go
// programs the module pins (Build, e.g. nats-server), subprocesses whose
// output goes to a log file (Start), and the command line run in process
// (CLI). A test package that uses it calls Main from its TestMain.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Main is a TestMain: it runs the tests with what workers remember between
// starts (BENCHFLEET_STATE_DIR, by default under $HOME) in a folder of the
// test process's own, then removes that folder and the programs Binary and
// Build made, and exits with the tests' code.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "benchfleet-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("BENCHFLEET_STATE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	removeBuilt()
	os.Exit(code)
}

// CLI runs the command line in process: Main with Args before each call's
// own. Main is cli.Run; the kit takes it as a value rather than importing
// the CLI, so the CLI's own tests (package cli) can use the kit too, and a
// test that only needs the binary does not link the CLI.
type CLI struct {
	Main func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	Args []string
}

// With is c with args added after its Args.
func (c CLI) With(args ...string) CLI {
	c.Args = append(append([]string(nil), c.Args...), args...)
	return c
}

// Run runs the command line with args, its output going to stdout and
// stderr, until it returns or ctx ends, and returns the exit code. It is
// the one in-process runner of the tests.
func (c CLI) Run(ctx context.Context, stdout, stderr io.Writer, args ...string) int {
	return c.Main(ctx, append(append([]string(nil), c.Args...), args...), stdout, stderr)
}

// Output runs the command line (Run) with t's context and returns the exit
// code and what it wrote.
func (c CLI) Output(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = c.Run(t.Context(), &out, &errb, args...)
	return code, out.String(), errb.String()
}

// Buffer is an io.Writer safe to read (String) while a command run in
// another goroutine writes to it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// built holds the programs Build made, by package path.
var built struct {
	mu   sync.Mutex
	dir  string
	bins map[string]*builtBin
}

type builtBin struct {
	once sync.Once
	path string
	err  error
}

// BinaryEnv names a benchfleet binary built for the whole test run (make
// test builds it once, before the tests): every test process uses it
// rather than building its own.
const BinaryEnv = "BENCHFLEET_TEST_BINARY"

// Binary returns the path of the real benchfleet binary: $BENCHFLEET_TEST_BINARY
// when set (it must exist), else one built once per test process, which
// the test package's TestMain (Main) removes.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinaryEnv); p != "" {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			t.Fatalf("%s=%s: not a built binary (%v)", BinaryEnv, p, err)
		}
		return p
	}
	return Build(t, "github.com/benchfleet/benchfleet/cmd/benchfleet")
}

// Build builds the Go program pkg (a package path the module resolves,
// e.g. github.com/nats-io/nats-server/v2 at the version go.mod pins) once
// per test process, in a temporary folder under os.TempDir, and returns its
// path. The test package's TestMain calls Main, which removes the folder.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*builtBin{}
	}
	b := built.bins[pkg]
	if b == nil {
		b = &builtBin{}
		built.bins[pkg] = b
	}
	built.mu.Unlock()
	b.once.Do(func() {
		built.mu.Lock()
		if built.dir == "" {
			built.dir, b.err = os.MkdirTemp("", "benchfleet-bin-")
		}
		dir := built.dir
		built.mu.Unlock()
		if b.err != nil {
			return
		}
		b.path = filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.path, pkg)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			b.err = errors.New("go build " + pkg + ": " + err.Error() + "\n" + out.String())
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// removeBuilt deletes the programs built by Binary and Build, if any.
func removeBuilt() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Process is a subprocess whose stdout and stderr go to a log file.
type Process struct {
	Cmd  *exec.Cmd
	Path string // the log file
	done chan struct{}
	err  error
}

// Start runs bin with args, logging to a file under t.TempDir(). At cleanup
// a process still running is killed with SIGKILL and waited for.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	// A worker's spool ledger goes to the test's own folder, not ~/.local/state.
	cmd.Env = append(os.Environ(), "BENCHFLEET_STATE_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, Path: logf.Name(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), Tail(p.Output(), 4000))
		}
	})
	return p
}

// Kill sends SIGKILL to the process (a real, uncatchable kill) and waits
// for it to exit. Killing an exited process is a no-op.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error, valid after Done.
func (p *Process) Err() error { return p.err }

// Output is what the process has written so far.
func (p *Process) Output() string {
	b, _ := os.ReadFile(p.Path)
	return string(b)
}

// Tail is the last n bytes of s, marked as cut when it was.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}
