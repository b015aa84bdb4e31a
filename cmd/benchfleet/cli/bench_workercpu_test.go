package cli_test

import (
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"testing"
)

// `bench worker-cpu` runs the real worker as a subprocess through a short
// job and prints its CPU share: the measurement is produced and sane (a
// share of the machine's cores, non-negative). How small it is depends on
// the machine's load, so it is not asserted.
func TestBenchWorkerCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	bin := benchfleetBinary(t)
	out, err := exec.CommandContext(t.Context(), bin, "bench", "worker-cpu", "--job-duration", "1s").CombinedOutput()
	if err != nil {
		t.Fatalf("bench worker-cpu: %v\n%s", err, out)
	}
	for _, re := range []string{
		`worker cpu while a 1s sim job runs: ([0-9.]+)% of a core \(`,
		`whole attempt \(claimed to its terminal event, [0-9.]+s\): ([0-9.]+)% of a core`,
		`telemetry sampler \(hwmon, one board\): [0-9.]+ µs of cpu per sample, ([0-9.]+)% of a core`,
	} {
		m := regexp.MustCompile(re).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no %q in\n%s", re, out)
		}
		p, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil || p < 0 || p > 100*float64(runtime.NumCPU()) {
			t.Fatalf("%s: %s%% is not a share of %d cores\n%s", re, m[1], runtime.NumCPU(), out)
		}
	}
}
