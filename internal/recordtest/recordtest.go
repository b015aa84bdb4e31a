// Package recordtest validates exports against a model of Tenstorrent's
// CompleteBenchmarkRun record, for tests of every package.
package recordtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Validate checks benchmark JSON lines against a pydantic model of
// Tenstorrent's CompleteBenchmarkRun (complete_benchmark_run.py beside this
// file, which names its upstream source). It skips
// the test when python3 or pydantic is missing, unless
// BENCHFLEET_REQUIRE_PYDANTIC=1 (as `make test` sets), which makes that a
// failure.
func Validate(t testing.TB, jsonl []byte) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "complete_benchmark_run.py")
	missing := func(why string) {
		if os.Getenv("BENCHFLEET_REQUIRE_PYDANTIC") == "1" {
			t.Fatalf("cannot validate the export: %s (BENCHFLEET_REQUIRE_PYDANTIC=1)", why)
		}
		t.Skipf("cannot validate the export: %s; install python3 with pydantic 2", why)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		missing("python3 not found")
	}
	cmd := exec.Command(py, script)
	cmd.Stdin = bytes.NewReader(jsonl)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		missing("pydantic is not installed")
	}
	if err != nil {
		t.Fatalf("export is not a valid CompleteBenchmarkRun: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
