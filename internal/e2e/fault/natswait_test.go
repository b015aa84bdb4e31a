//go:build unix

package fault

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
)

// The NATS server stops for 10 s while `submit --wait` follows a running
// job, and starts again (same port, same JetStream data). The waiter
// (stdout and stderr in one log here) says once that NATS does not answer
// and once that it answers again, keeps waiting, and exits 0 with the
// job's verdict.
func TestSubmitWaitRidesOutANATSOutage(t *testing.T) {
	t.Parallel()
	// A random port the server binds itself (a port chosen free and then
	// bound can be taken in between by any connection of a test beside
	// this one); the restart binds the same one.
	opts := embedded.Options{Dir: filepath.Join(t.TempDir(), "nats")}
	srv, err := embedded.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	listen := srv.Addr().String()
	opts.Listen = listen
	t.Cleanup(func() { srv.Shutdown() })
	url := "nats://" + listen
	_, js := fleettest.Connect(t, url)
	fleettest.Topology(t, js, topology.Config{AckWait: time.Minute})
	store := "file://" + t.TempDir()
	w := exec.Command(clitest.Binary(t), "worker", "--nats", url, "--store", store, "--slots", "sim=1", "--id", "nats-wait-w", "--log-level", "warn")
	w.Env = append(os.Environ(), "BENCHFLEET_STATE_DIR="+t.TempDir())
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })

	const run = "nats-down-wait"
	p := clitest.Start(t, clitest.Binary(t), "submit", "--nats", url, "--store", store, "--log-level", "error",
		"--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--label", "sim.duration=20s",
		"--run", run, "--wait", "--timeout", "2m")
	fleettest.Eventually(t, time.Minute, "the waiter following the running job", func() bool {
		return strings.Contains(p.Output(), "1 running")
	})
	srv.Shutdown()
	srv.WaitForShutdown()
	time.Sleep(10 * time.Second)
	if srv, err = embedded.Start(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	select {
	case <-p.Done():
	case <-time.After(2 * time.Minute):
		t.Fatalf("submit --wait still waiting:\n%s", p.Output())
	}
	out, code := p.Output(), 0
	var exit *exec.ExitError
	if errors.As(p.Err(), &exit) {
		code = exit.ExitCode()
	} else if p.Err() != nil {
		t.Fatal(p.Err())
	}
	t.Logf("exit %d\n%s", code, out)
	if code != 0 || !strings.Contains(out, "1/1 done (1 passed") {
		t.Fatalf("submit --wait: exit %d, want 0 with the job passed", code)
	}
	if n := strings.Count(out, "NATS has not answered since"); n != 1 {
		t.Errorf("the waiter says NATS does not answer %d times, want once", n)
	}
	if !strings.Contains(out, "NATS answers again") {
		t.Errorf("the waiter does not say NATS answers again")
	}
}
