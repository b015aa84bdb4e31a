package cli

import (
	"strings"
	"testing"
)

// bench gate refuses a zero (not the default) and --confirm 0 (it compares
// the gate with and without confirmation) with a usage error naming the
// flag.
func TestBenchGateUsageErrors(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--confirm", "--drop", "--planted", "--series", "--window", "--noise-k"} {
		code, _, errOut := ciRun(t, "bench", "gate", flag, "0")
		if code != ExitUsage || !strings.Contains(errOut, flag+" 0") {
			t.Errorf("bench gate %s 0: exit %d, stderr %q; want 64 naming %s", flag, code, errOut, flag)
		}
	}
}

// bench gate's --confirm has one check and one message: below 1, or above
// the most repeats a job may have, it is the bench's range (1 to 20) that
// is named, not the gate's (which takes 0).
func TestBenchGateConfirmRange(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"-1", "0", "21"} {
		code, _, errOut := ciRun(t, "bench", "gate", "--confirm", v)
		if want := "bench gate: --confirm " + v + ": must be between 1 and 20"; code != ExitUsage || !strings.Contains(errOut, want) {
			t.Errorf("bench gate --confirm %s: exit %d, stderr %q; want 64 saying %q", v, code, errOut, want)
		}
	}
}
