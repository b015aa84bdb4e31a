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
