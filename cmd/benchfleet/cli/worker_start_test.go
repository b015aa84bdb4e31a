package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// brokenStore is a file store whose results/ is a regular file, so every
// result write fails (ENOTDIR) as a store that is down does.
func brokenStore(t *testing.T) storage.Bucket {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results"), []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spoolResults leaves n results of run in the spool dir, as a worker does
// while its store is down.
func spoolResults(t *testing.T, dir, run string, n int) {
	t.Helper()
	sp, err := spool.New(dir, brokenStore(t), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range n {
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: fmt.Sprintf("j%d", i), Run: run, RunCreatedAt: now,
			Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Attempt: 1, StartedAt: now, FinishedAt: now}
		if _, spooled, err := sp.Deliver(t.Context(), r, nil); err != nil || !spooled {
			t.Fatalf("spool a result: spooled %v, %v", spooled, err)
		}
	}
}

// startWorker runs `worker` in process until the test ends and waits until
// it serves.
func startWorker(t *testing.T, args ...string) (stop func() int, errOut *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := runAsync(ctx, &out, &errb, append([]string{"worker", "--slots", "sim=1", "--log-format", "json"}, args...)...)
	stopped := false
	code := 0
	stop = func() int {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code
	}
	t.Cleanup(func() { stop() })
	fleettest.Eventually(t, 30*time.Second, "the worker to serve", func() bool {
		select {
		case c := <-done:
			stopped = true
			t.Fatalf("worker exited %d before serving:\n%s", c, errb.String())
		default:
		}
		return strings.Contains(errb.String(), "serving")
	})
	return stop, &errb
}

// A worker restarted with another --spool (or none)
// while its earlier spool still holds results refuses to start, naming
// that folder and how to drain it; `spool drain` uploads them; then the
// restart goes ahead.
func TestWorkerRefusesAnotherSpoolWhileTheOldHoldsResults(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	storeDir := t.TempDir()
	state := t.TempDir()
	oldSpool, newSpool := filepath.Join(t.TempDir(), "spool-a"), filepath.Join(t.TempDir(), "spool-b")
	common := []string{"--nats", srv.ClientURL(), "--store", "file://" + storeDir, "--id", "mover", "--state-dir", state}

	stop, _ := startWorker(t, append(common, "--spool", oldSpool)...)
	if code := stop(); code != 0 {
		t.Fatalf("first worker: exit %d", code)
	}
	// While it ran, the store was down: results wait in its spool.
	spoolResults(t, oldSpool, "moved-run", 3)

	for _, args := range [][]string{append(common, "--spool", newSpool), common} {
		code, _, errOut := runBounded(t, append([]string{"worker", "--slots", "sim=1"}, args...)...)
		if code != cli.ExitUsage {
			t.Fatalf("worker %s while %s holds 3 results: exit %d, want %d\n%s", strings.Join(args, " "), oldSpool, code, cli.ExitUsage, errOut)
		}
		for _, want := range []string{oldSpool, "3 result(s)", "benchfleet spool drain " + oldSpool, "--spool " + oldSpool} {
			if !strings.Contains(errOut, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, errOut)
			}
		}
	}

	code, out, errOut := runBounded(t, "spool", "drain", oldSpool, "--store", "file://"+storeDir)
	if code != 0 || !strings.Contains(out, "3 results delivered") || !strings.Contains(out, "the spool is empty") {
		t.Fatalf("spool drain: exit %d\n%s\n%s", code, out, errOut)
	}
	rs := fleettest.Results(t, openStore(t, storeDir), "moved-run")
	if len(rs) != 3 {
		t.Fatalf("%d results in the store after the drain, want 3", len(rs))
	}
	stop, _ = startWorker(t, append(common, "--spool", newSpool)...)
	if code := stop(); code != 0 {
		t.Fatalf("worker on the new spool after the drain: exit %d", code)
	}
}

func openStore(t *testing.T, dir string) storage.Bucket {
	t.Helper()
	b, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A worker whose --id a live worker holds refuses to
// start (two workers with one id overwrite each other's heartbeat); the
// record of this host's earlier process that was killed (its pid gone), or
// a stale record, does not stop it.
func TestWorkerRefusesLiveDuplicateID(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	base := []string{"--nats", srv.ClientURL(), "--store", "file://" + t.TempDir(), "--state-dir", t.TempDir()}

	startWorker(t, append(base, "--id", "twin", "--spool", t.TempDir())...)
	fleettest.Eventually(t, 10*time.Second, "twin's heartbeat", func() bool {
		_, err := topo.Workers.Get(t.Context(), "twin")
		return err == nil
	})
	code, _, errOut := runBounded(t, append([]string{"worker", "--slots", "sim=1", "--id", "twin", "--spool", t.TempDir()}, base...)...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "worker id twin is in use") || !strings.Contains(errOut, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("a second worker with a live id: exit %d, want %d naming the live one\n%s", code, cli.ExitUsage, errOut)
	}

	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, c := range []struct {
		id     string
		st     protocol.WorkerStatus
		starts bool
	}{
		{"phoenix", protocol.WorkerStatus{Host: host, PID: dead.Process.Pid, Time: now}, true},         // killed on this host
		{"faded", protocol.WorkerStatus{Host: "elsewhere", PID: 1, Time: now.Add(-time.Minute)}, true}, // stale
		{"remote", protocol.WorkerStatus{Host: "elsewhere", PID: 1, Time: now}, false},                 // live on another host
	} {
		c.st.Schema, c.st.ID = protocol.SchemaWorker, c.id
		data, _ := json.Marshal(c.st)
		if _, err := topo.Workers.Put(t.Context(), c.id, data); err != nil {
			t.Fatal(err)
		}
		if c.starts {
			stop, _ := startWorker(t, append(base, "--id", c.id)...)
			if code := stop(); code != 0 {
				t.Errorf("worker %s: exit %d", c.id, code)
			}
			continue
		}
		code, _, errOut := runBounded(t, append([]string{"worker", "--slots", "sim=1", "--id", c.id}, base...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, "on host elsewhere") {
			t.Errorf("worker %s, live on another host: exit %d, want %d\n%s", c.id, code, cli.ExitUsage, errOut)
		}
	}
}
