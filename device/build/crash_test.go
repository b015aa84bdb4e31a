package build

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// crashChildEnv makes the test binary a worker that provisions one build
// (crashSpec, as JSON) and waits to be killed.
const crashChildEnv = "BENCHFLEET_BUILD_CRASH_CHILD"

type crashSpec struct {
	Dir, Store, Repo string
	Req              device.BuildRequest
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	os.Exit(m.Run())
}

func crashChild(spec string) int {
	var s crashSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	store, err := file.NewBucket(s.Store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := New(Config{
		Dir: s.Dir, Repos: map[string]string{testRepo: s.Repo}, Fetch: store.Get,
		NotFound: func(err error) bool { return errors.Is(err, storage.ErrNotFound) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := c.Provision(context.Background(), s.Req, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestSIGKILLWhileMakingLeavesNoHalfMadeEnvironment kills a worker
// (this test binary, re-executed) with SIGKILL while it makes an
// environment; a new Cache on the same directory removes the half-made
// one and makes the build anew.
func TestSIGKILLWhileMakingLeavesNoHalfMadeEnvironment(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(t)
	req := f.request(0, f.wheel(t, "crashmod", "1.0"))
	spec, err := json.Marshal(crashSpec{Dir: cfg.Dir, Store: f.store.Root(), Repo: f.repo, Req: req})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(spec))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// Kill it once its temporary environment is on disk, half made.
	pattern := filepath.Join(cfg.Dir, dirEnvs, tmpPrefix+"*", "pyvenv.cfg")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the worker ended (%v) before its environment was seen half made:\n%s", err, stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 2 minutes:\n%s", pattern, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the worker ended with %v, not killed:\n%s", err, stderr.String())
	}
	if m, _ := filepath.Glob(pattern); len(m) == 0 {
		t.Fatal("the killed worker left no temporary environment: the test did not test a crash mid-making")
	}

	c := f.cache(t, cfg)
	for _, sub := range append([]string{dirMirrors, dirTmp}, entryKinds...) {
		names, err := readDirNames(c.path(sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasPrefix(n, tmpPrefix) || sub == dirTmp {
				t.Errorf("New left %s/%s", sub, n)
			}
		}
	}
	lease := provision(t, c, req)
	defer lease.Release()
	if lease.Hit {
		t.Error("the build the killed worker was making is a hit")
	}
	if out := asNobody(t, lease.Checkout, lease.Python, "-c", "import crashmod; print(crashmod.VERSION)"); strings.TrimSpace(out) != "1.0" {
		t.Errorf("the build made after the crash imports %q", out)
	}
	for _, sub := range entryKinds {
		names, _ := readDirNames(c.path(sub))
		for _, n := range names {
			if strings.HasPrefix(n, tmpPrefix) {
				t.Errorf("a temporary remains after the build: %s/%s", sub, n)
			}
		}
	}
}

// A git command killed in a mirror leaves lock files that fail every
// later fetch of the refs they lock; New removes them.
func TestNewRemovesStaleGitLocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(t)
	c := f.cache(t, cfg)
	provision(t, c, f.request(0, f.wheel(t, "lockmod", "1.0"))).Release()
	c.Close()
	lock := filepath.Join(cfg.Dir, dirMirrors, mirrorName(testRepo, f.commits[1]), "refs", "benchfleet", f.commits[1]+".lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c = f.cache(t, cfg)
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New left the stale lock %s: %v", lock, err)
	}
	provision(t, c, f.request(1, f.wheel(t, "lockmod", "1.0"))).Release()
}
