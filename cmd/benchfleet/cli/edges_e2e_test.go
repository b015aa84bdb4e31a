package cli_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/fleettest"
)

// Ctrl-C on `submit --wait` says the run goes on and how
// to follow it, and exits 130.
func TestSubmitWaitInterruptSaysHowToFollow(t *testing.T) {
	t.Parallel()
	bin := benchfleetBinary(t)
	srv := fleettest.Server(t)
	cmd := exec.Command(bin, "submit", "--nats", srv.ClientURL(), "--store", "file://"+t.TempDir(), "--pool", "cpu", "--model", "mlp", "--batch-size", "2",
		"--loop-count", "4", "--run", "sigint1", "--wait", "--log-level", "warn")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	fleettest.Eventually(t, 60*time.Second, "the submit to start waiting", func() bool {
		return strings.Contains(stdout.String(), "1/1") || strings.Contains(stdout.String(), "0/1")
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		t.Fatalf("exit %v, want %d\nstdout:\n%s\nstderr:\n%s", err, cli.ExitInterrupted, stdout.String(), stderr.String())
	}
	for _, want := range []string{"goes on", "benchfleet runs watch sigint1"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// runAsync runs the command line in process until ctx ends; the returned
// channel yields the exit code.
func runAsync(ctx context.Context, out, errb *syncBuffer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- cmdline.Run(ctx, out, errb, args...) }()
	return done
}

// `dev --listen` on a busy port fails at once naming the
// address; a second dev on one data directory, and a second worker on one
// spool, fail and say who holds it.
func TestDevBusyPortAndDataDirLock(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	code, _, errOut := runBounded(t, "dev", "--data", t.TempDir(), "--listen", busy.Addr().String(), "--slots", "sim=1")
	if code == 0 || !strings.Contains(errOut, busy.Addr().String()) || !strings.Contains(errOut, "address already in use") {
		t.Errorf("dev on a busy port: exit %d, stderr: %s", code, errOut)
	}

	data := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var out1, err1 syncBuffer
	port := freePort(t)
	done := runAsync(ctx, &out1, &err1, "dev", "--data", data, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--slots", "sim=1", "--log-level", "warn")
	defer func() { cancel(); <-done }()
	fleettest.Eventually(t, 60*time.Second, "the first dev to start", func() bool { return strings.Contains(out1.String(), "Ctrl-C to stop") })
	code, _, errOut = runBounded(t, "dev", "--data", data, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--slots", "sim=1")
	if code != cli.ExitUsage || !strings.Contains(errOut, "in use by pid") || !strings.Contains(errOut, "benchfleet dev") {
		t.Errorf("second dev on one data directory: exit %d, stderr: %s", code, errOut)
	}

	spool := t.TempDir()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var out2, err2 syncBuffer
	wctx, wcancel := context.WithCancel(t.Context())
	wdone := runAsync(wctx, &out2, &err2, "worker", "--nats", url, "--store", "file://"+t.TempDir(), "--slots", "sim=1", "--id", "w1", "--spool", spool, "--log-format", "json")
	defer func() { wcancel(); <-wdone }()
	fleettest.Eventually(t, 60*time.Second, "the first worker to start", func() bool { return strings.Contains(err2.String(), "w1") })
	code, _, errOut = runBounded(t, "worker", "--nats", url, "--store", "file://"+t.TempDir(), "--slots", "sim=1", "--id", "w2", "--spool", spool)
	if code != cli.ExitUsage || !strings.Contains(errOut, "in use by pid") || !strings.Contains(errOut, "worker w1") {
		t.Errorf("second worker on one spool: exit %d, stderr: %s", code, errOut)
	}
}

// runBounded is run for a command that would otherwise serve until
// interrupted: it is stopped after a generous bound (the bound is not the
// assertion; a command that should have refused to start just fails the test).
func runBounded(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := cmdline.Run(ctx, &out, &errb, args...)
	return code, out.String(), errb.String()
}

// Without S3 credentials the error says which are
// missing and how to give them, not the SDK's provider chain; a query of
// an unreachable store says it cannot reach it and nothing of spooling.
func TestS3MissingCredentialsAndUnreachableStore(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	dead := fmt.Sprintf("s3://bench/p?endpoint=http://127.0.0.1:%d&region=us-east-1&path_style=true", freePort(t))
	code, _, errOut := run(t, "results", "query", "--store", dead)
	if code == 0 || !strings.Contains(errOut, "AWS_ACCESS_KEY_ID") || !strings.Contains(errOut, "AWS_PROFILE") {
		t.Errorf("no credentials: exit %d, stderr does not say how to give them:\n%s", code, errOut)
	}
	for _, bad := range []string{"IMDS", "get identity", "failed to refresh"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("no credentials: stderr carries the SDK's chain (%q):\n%s", bad, errOut)
		}
	}

	t.Setenv("AWS_ACCESS_KEY_ID", "benchfleet")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "benchfleet-secret")
	code, _, errOut = run(t, "results", "query", "--store", dead)
	if code == 0 || !strings.Contains(errOut, "cannot reach") {
		t.Errorf("unreachable store: exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(strings.ToLower(errOut), "spool") {
		t.Errorf("a query of an unreachable store talks about spooling:\n%s", errOut)
	}
}
