package cli

import (
	"strings"
	"testing"
)

// Issue 12, item 1: re-submitting a run id with a different spec is a usage
// error that says what differs; the same spec still re-attaches.
func TestResubmitDifferentSpecExits64(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	submit := func(batch string) (int, string, string) {
		return ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", batch, "--loop-count", "4",
			"--run", "respec", "--label", "sim.duration=1ms", "--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s")...)
	}
	if code, out, errOut := submit("4"); code != ExitOK {
		t.Fatalf("first submit: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := submit("16")
	if code != ExitUsage {
		t.Fatalf("re-submit with --batch-size 16: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitUsage, out, errOut)
	}
	if strings.Contains(out, "re-attaching") {
		t.Errorf("a different spec must not re-attach:\n%s", out)
	}
	for _, want := range []string{"respec", "batch 16", "batch 4"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	t.Logf("re-submit with another batch size says: %s", errOut)
	code, out, errOut = submit("4")
	if code != ExitOK || !strings.Contains(out, "re-attaching") {
		t.Fatalf("re-submit of the same spec: exit %d, want 0 and re-attaching\n%s\n%s", code, out, errOut)
	}
}
