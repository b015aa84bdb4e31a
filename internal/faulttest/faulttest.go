//go:build unix

// Package faulttest proves the delivery contract of DESIGN §3 with real
// parts: the real benchfleet binary as worker subprocesses killed with
// SIGKILL, a three-node nats-server cluster losing its stream leader, and
// `benchfleet bench chaos`. This file holds the helpers; the tests beside
// it are the proofs.
package faulttest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage"
)

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

// Binary builds the real benchfleet binary once per test process and
// returns its path. Call RemoveBinary from TestMain after m.Run.
func Binary(t testing.TB) string {
	t.Helper()
	return Build(t, "github.com/benchfleet/benchfleet/cmd/benchfleet")
}

// Build builds the Go program pkg (a package path the module resolves,
// e.g. github.com/nats-io/nats-server/v2 at the version go.mod pins) once
// per test process and returns its path. Call RemoveBinary from TestMain
// after m.Run.
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
			built.dir, b.err = os.MkdirTemp("", "benchfleet-faulttest-")
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

// RemoveBinary deletes the programs built by Binary and Build, if any.
func RemoveBinary() {
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
			t.Logf("log of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), tail(p.Output(), 4000))
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

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// CountingBucket wraps a Bucket and counts what happens to result keys, so
// a test can tell duplicate deliveries (fine: at-least-once) from duplicate
// results (never: exactly-once results).
type CountingBucket struct {
	storage.Bucket

	mu        sync.Mutex
	written   map[string]int
	conflicts int
	found     int
	inflight  atomic.Int64
}

// NewCountingBucket wraps b.
func NewCountingBucket(b storage.Bucket) *CountingBucket {
	return &CountingBucket{Bucket: b, written: map[string]int{}}
}

// Put implements storage.Bucket, counting conditional creates of result
// keys: those that wrote, and those refused with ErrExists.
func (c *CountingBucket) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	// A result is visible to readers before Put returns; Counts waits for
	// writes in flight so a just-visible result is counted.
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	err := c.Bucket.Put(ctx, key, r, opts...)
	if strings.HasPrefix(key, storage.PrefixResults) && storage.ApplyPutOptions(opts).IfAbsent {
		c.mu.Lock()
		switch {
		case err == nil:
			c.written[key]++
		case errors.Is(err, storage.ErrExists):
			c.conflicts++
		}
		c.mu.Unlock()
	}
	return err
}

// Exists implements storage.Bucket, counting result keys found already
// there (a duplicate delivery caught before running or uploading).
func (c *CountingBucket) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := c.Bucket.Exists(ctx, key)
	if ok && err == nil && strings.HasPrefix(key, storage.PrefixResults) {
		c.mu.Lock()
		c.found++
		c.mu.Unlock()
	}
	return ok, err
}

// Counts reports, for result keys: written maps each key to how many
// conditional creates wrote it (more than 1 would be a duplicate result);
// conflicts is how many were refused with ErrExists; found is how many
// existence checks found a result already there.
func (c *CountingBucket) Counts() (written map[string]int, conflicts, found int) {
	for deadline := time.Now().Add(10 * time.Second); c.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := make(map[string]int, len(c.written))
	for k, v := range c.written {
		w[k] = v
	}
	return w, c.conflicts, c.found
}
