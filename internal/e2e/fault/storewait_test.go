//go:build unix

package fault

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
)

// s3Env is the environment of a benchfleet process using gw as its store
// (the standard AWS chain), so the test stays parallel.
func s3Env(t *testing.T, gw *s3test.Server) []string {
	return append(os.Environ(), "AWS_ACCESS_KEY_ID="+gw.AccessKey, "AWS_SECRET_ACCESS_KEY="+gw.SecretKey, "AWS_SESSION_TOKEN=",
		"AWS_REGION="+s3test.Region, "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true", "BENCHFLEET_STATE_DIR="+t.TempDir())
}

// runBinary runs the benchfleet binary with env and args until it exits
// (at most limit) and returns its exit code and output.
func runBinary(t *testing.T, env []string, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Binary(t), args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		code = exit.ExitCode()
	default:
		t.Fatalf("benchfleet %s: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return code, out.String(), errb.String()
}

// `submit --wait` is started while the store (VersityGW) is down, and
// the store comes back 20 s later. The job runs meanwhile (its worker
// spools the result); the waiter says once that the store does not
// answer and once that it answers again, keeps waiting, and exits 0
// with the job's verdict once the spooled result reaches the store.
func TestSubmitWaitRidesOutAStoreOutage(t *testing.T) {
	t.Parallel()
	gw := s3test.Start(t)
	env := s3Env(t, gw)
	f := fleettest.New(t, fleettest.Options{AckWait: 5 * time.Second})
	store := gw.URL("farm")
	w := exec.Command(clitest.Binary(t), "worker", "--nats", f.URL, "--store", store, "--spool", t.TempDir(), "--slots", "sim=1",
		"--id", "store-wait-w", "--log-level", "warn")
	w.Env = env
	var wlog bytes.Buffer
	w.Stdout, w.Stderr = &wlog, &wlog
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })

	gw.Stop()
	down := time.Now()
	type done struct {
		code        int
		out, errOut string
	}
	result := make(chan done, 1)
	go func() {
		code, out, errOut := runBinary(t, env, 3*time.Minute, "submit", "--nats", f.URL, "--store", store, "--log-level", "error",
			"--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--label", "sim.duration=200ms",
			"--run", "store-down-wait", "--wait", "--timeout", "2m")
		result <- done{code, out, errOut}
	}()
	select {
	case r := <-result:
		t.Fatalf("submit --wait ended while the store was down: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	case <-time.After(time.Until(down.Add(20 * time.Second))):
	}
	gw.Start()
	r := <-result
	t.Logf("exit %d %s after the store went down\nstdout:\n%s\nstderr:\n%s", r.code, time.Since(down).Round(time.Second), r.out, r.errOut)
	if r.code != 0 {
		t.Fatalf("submit --wait: exit %d, want 0\nworker:\n%s", r.code, clitest.Tail(wlog.String(), 3000))
	}
	if !strings.Contains(r.out, "1/1 done (1 passed") {
		t.Errorf("stdout does not give the job's verdict (passed):\n%s", r.out)
	}
	if n := strings.Count(r.errOut, "the store has not answered since"); n != 1 {
		t.Errorf("stderr says the store does not answer %d times, want once:\n%s", n, r.errOut)
	}
	if !strings.Contains(r.errOut, "the store answers again") {
		t.Errorf("stderr does not say the store answers again:\n%s", r.errOut)
	}
}

// A store outage that outlasts a waiter's --timeout ends it with exit 69
// ("could not reach"), never 1 (a job failed) nor 3 (the run did not end
// in time): `runs watch` and `results gate` of a run that passed, with
// the store down. `results gate` started while the store is down and
// given the time, judges the run once the store is back.
func TestWaitersExitUnavailableWhenTheStoreOutageOutlastsTheTimeout(t *testing.T) {
	t.Parallel()
	gw := s3test.Start(t)
	env := s3Env(t, gw)
	f := fleettest.New(t, fleettest.Options{AckWait: 5 * time.Second})
	store := gw.URL("farm")
	w := exec.Command(clitest.Binary(t), "worker", "--nats", f.URL, "--store", store, "--slots", "sim=1", "--id", "outlast-w", "--log-level", "warn")
	w.Env = env
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	const run = "store-outlasts"
	code, out, errOut := runBinary(t, env, 2*time.Minute, "submit", "--nats", f.URL, "--store", store, "--log-level", "error",
		"--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--label", "sim.duration=10ms", "--run", run, "--wait", "--timeout", "1m")
	if code != 0 {
		t.Fatalf("submit --wait with the store up: exit %d\n%s\n%s", code, out, errOut)
	}

	gw.Stop()
	for _, args := range [][]string{
		{"runs", "watch", run, "--timeout", "5s"},
		{"results", "gate", "--run", run, "--timeout", "5s"},
	} {
		code, out, errOut := runBinary(t, env, time.Minute, append([]string{"--nats", f.URL, "--store", store, "--log-level", "error"}, args...)...)
		t.Logf("%s with the store down: exit %d\n%s%s", strings.Join(args[:2], " "), code, out, errOut)
		if code != 69 {
			t.Errorf("%s with the store down for longer than --timeout: exit %d, want 69\n%s\n%s", strings.Join(args[:2], " "), code, out, errOut)
		}
		if !strings.Contains(errOut, "the store has not answered since") || !strings.Contains(errOut, "during an outage") {
			t.Errorf("%s does not say the store did not answer until the timeout:\n%s", strings.Join(args[:2], " "), errOut)
		}
	}

	type done struct {
		code        int
		out, errOut string
	}
	gate := make(chan done, 1)
	go func() {
		code, out, errOut := runBinary(t, env, 2*time.Minute, "--nats", f.URL, "--store", store, "--log-level", "error",
			"results", "gate", "--run", run, "--timeout", "90s")
		gate <- done{code, out, errOut}
	}()
	time.Sleep(3 * time.Second)
	gw.Start()
	r := <-gate
	if r.code != 0 || !strings.Contains(r.out, "insufficient-history") || !strings.Contains(r.errOut, "the store answers again") {
		t.Errorf("results gate while the store comes back: exit %d, want 0 with the run's verdicts, saying the store answers again\n%s\n%s", r.code, r.out, r.errOut)
	}
}
