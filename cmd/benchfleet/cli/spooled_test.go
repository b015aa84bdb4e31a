package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/worker"
)

// A job whose worker spooled its result (the store did
// not take it) is over, but its result is not in the store. The waiter
// (`submit --wait`, `runs show`) and the dashboard say "N results spooled
// on worker W" and where, instead of "running" forever; the worker's
// heartbeat says what its spool holds and where.
func TestWaiterAndDashboardShowSpooledResults(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	nc, js := fleettest.Connect(t, srv.ClientURL())
	tc := topology.Config{AckWait: 5 * time.Second}
	topo := fleettest.Topology(t, js, tc)
	// The worker's store refuses every result; readers see a store that
	// answers but does not have them.
	broken := brokenStoreDir(t)
	spoolDir := filepath.Join(t.TempDir(), "spool")
	sp, err := spool.New(spoolDir, broken, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w := fleettest.StartWorker(t, worker.Config{ID: "spooler", Conn: nc, Store: broken, Sink: sp, Slots: fleettest.SimSlots("sim", 1),
		AckWait: tc.AckWait, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	readDir := t.TempDir()
	args := []string{"--nats", srv.ClientURL(), "--store", "file://" + readDir, "--log-level", "warn"}

	code, out, errOut := ciRun(t, append(args, "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--label", "sim.duration=1ms", "--run", "spooled-run", "--wait", "--timeout", "5s")...)
	if code != ExitTimeout {
		t.Fatalf("submit --wait: exit %d, want %d (the result never reaches the store)\n%s\n%s", code, ExitTimeout, out, errOut)
	}
	want := "1 result spooled on worker spooler"
	if !strings.Contains(out, want) || !strings.Contains(out, spoolDir) {
		t.Errorf("submit --wait does not say %q and where (%s):\n%s", want, spoolDir, out)
	}
	if st := w.Status(); st.Spool == nil || st.Spool.Path != spoolDir || st.Spool.Entries != 1 {
		t.Errorf("heartbeat spool: %+v, want %s with 1 entry", st.Spool, spoolDir)
	}

	code, out, errOut = ciRun(t, append(args, "runs", "show", "spooled-run")...)
	if code != ExitOK || !strings.Contains(out, want) || strings.Contains(out, "1 running") {
		t.Errorf("runs show: exit %d, want %q and not running\n%s\n%s", code, want, out, errOut)
	}
	t.Logf("runs show:\n%s", out)
	code, out, errOut = ciRun(t, append(args, "fleet", "status")...)
	if code != ExitOK || !strings.Contains(out, "worker spooler: 1 result spooled in "+spoolDir) {
		t.Errorf("fleet status: exit %d, does not say what spooler's spool holds\n%s\n%s", code, out, errOut)
	}

	readStore, err := file.NewBucket(readDir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ui.New(ui.Config{JS: js, Topology: topo, Store: readStore})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	for _, page := range []string{"/runs/spooled-run", "/"} {
		resp, err := http.Get(hs.URL + page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if page == "/" {
			if !strings.Contains(string(body), "1 spooled") {
				t.Errorf("home page does not show the run's spooled result:\n%s", body)
			}
			continue
		}
		if !strings.Contains(string(body), want) || !strings.Contains(string(body), spoolDir) {
			t.Errorf("run page does not say %q and where:\n%s", want, body)
		}
	}
}

// brokenStoreDir is a file store whose results/ is a regular file, so
// every result write fails as a store that is down does.
func brokenStoreDir(t *testing.T) storage.Bucket {
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
