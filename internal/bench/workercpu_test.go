//go:build unix

package bench

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
)

// `bench worker-cpu` runs the real worker as a subprocess through a short
// job and measures its CPU share: the measurement is produced and sane (a
// share of the machine's cores, non-negative). How small it is depends on
// the machine's load, so it is not asserted. The attempt is timed from
// when the bench saw its claim, which may come a little after it started.
func TestRunWorkerCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	rep, err := RunWorkerCPU(t.Context(), WorkerCPUConfig{JobDuration: time.Second, Exe: clitest.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	cores := 100 * float64(runtime.NumCPU())
	for name, p := range map[string]float64{"window": rep.Share, "attempt": rep.AttemptShare, "sampler": rep.SamplerShare} {
		if p < 0 || p > cores {
			t.Errorf("%s: %v%% is not a share of %d cores", name, p, runtime.NumCPU())
		}
	}
	if rep.PID <= 0 || rep.Window <= 0 || rep.Window > time.Second || rep.AttemptWall < 900*time.Millisecond || rep.SampleCPU < 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.Method != "schedstat" && rep.Method != "stat" {
		t.Errorf("method %q", rep.Method)
	}
	var out strings.Builder
	rep.Print(&out)
	for _, want := range []string{"worker cpu while a 1s sim job runs: ", "whole attempt (claimed to its terminal event, ", "telemetry sampler (hwmon, one board): "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
