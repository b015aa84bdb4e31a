package harness

import (
	"slices"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// A provisioned build's PYTHONPATH keeps the checkout's directories and
// drops the host's site directories, which would come before the job's
// wheels (tt-xla's activate lists /usr/local/lib/python3.11/dist-packages).
func TestProvisionedPythonPathDropsSiteDirs(t *testing.T) {
	c := TTXLA{}.Command("/cache/trees/t1", protocol.Benchmark{Test: "tests/benchmark/test_vision.py::test_resnet50", Model: "resnet50", BatchSize: 8, LoopCount: 4})
	got := withoutSiteDirs(c.PythonPath)
	if slices.Contains(got, "/usr/local/lib/python3.11/dist-packages") || !slices.Contains(got, "/cache/trees/t1") || !slices.Contains(got, "/cache/trees/t1/tests") {
		t.Fatalf("PYTHONPATH %q of a provisioned build from %q", got, c.PythonPath)
	}
	if len(c.PythonPath)-len(got) != 1 {
		t.Fatalf("dropped %d entries of %q, want only the dist-packages one", len(c.PythonPath)-len(got), c.PythonPath)
	}
}
