package cli_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/testfleet"
)

// Issue 12, item 5: Ctrl-C on `submit --wait` says the run goes on and how
// to follow it, and exits 130.
func TestSubmitWaitInterruptSaysHowToFollow(t *testing.T) {
	t.Parallel()
	bin := benchfleetBinary(t)
	srv := testfleet.Server(t)
	cmd := exec.Command(bin, "submit", "--nats", srv.ClientURL(), "--pool", "cpu", "--model", "mlp", "--batch-size", "2",
		"--loop-count", "4", "--run", "sigint1", "--wait", "--log-level", "warn")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testfleet.Eventually(t, 60*time.Second, "the submit to start waiting", func() bool {
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
