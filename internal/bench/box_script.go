package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// boxScript is the minimal harness: it stands where the runner runs
// "<python> -m pytest ...", prints forge's warmup and timed loops
// (sleeping ITER_MS per iteration), the PCC line forge prints on a pass,
// and writes a forge-shaped report whose total_samples and total_time are
// what it printed and measured (the runner checks both). %PYTHON% and
// %ITER_MS% are filled in by writeBoxHarness.
const boxScript = `#!%PYTHON%
# benchfleet bench dispatch --box: a minimal forge harness (standard library only).
import json, sys, time
argv = sys.argv[1:]

def flag(name, default):
    return argv[argv.index(name) + 1] if name in argv else default

ITER_MS = %ITER_MS%
batch = int(flag("--batch-size", "1"))
timed = 0.0
for n in (int(flag("--warmup-count", "1")), int(flag("--loop-count", "1"))):
    t0 = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        time.sleep(ITER_MS / 1000.0)
        print(f"Iteration {i} took {(time.perf_counter() - t) * 1000:.4f} ms", flush=True)
    timed = time.perf_counter() - t0
    print(f"Total time: {timed:.4f}s for {n} iterations", flush=True)
print("PCC verification passed with PCC=0.990000", flush=True)
report = {"model": "box-bench", "batch_size": batch, "pcc": 0.99,
          "measurements": [
              {"iteration": 1, "step_name": "box-bench", "measurement_name": "total_samples", "value": batch * n},
              {"iteration": 1, "step_name": "box-bench", "measurement_name": "total_time", "value": timed}],
          "device_info": {"arch": "wormhole"}}
with open(flag("--output-file", None), "w") as f:
    json.dump(report, f)
`

// writeBoxHarness writes the harness under dir: an empty checkout and the
// script (run by python, each iteration sleeping iter), both readable and
// searchable by every user, as a job user other than the worker needs.
func writeBoxHarness(dir, python string, iter time.Duration) (checkout, exe string, err error) {
	checkout = filepath.Join(dir, "checkout")
	exe = filepath.Join(dir, "bin", "python")
	for _, d := range []string{checkout, filepath.Dir(exe)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", "", fmt.Errorf("harness script: %w", err)
		}
		if err := os.Chmod(d, 0o755); err != nil { // whatever the umask
			return "", "", fmt.Errorf("harness script: %w", err)
		}
	}
	body := strings.NewReplacer("%PYTHON%", python, "%ITER_MS%", fmt.Sprintf("%g", float64(iter)/float64(time.Millisecond))).Replace(boxScript)
	if err := os.WriteFile(exe, []byte(body), 0o755); err != nil {
		return "", "", fmt.Errorf("harness script: %w", err)
	}
	if err := os.Chmod(exe, 0o755); err != nil {
		return "", "", fmt.Errorf("harness script: %w", err)
	}
	return checkout, exe, nil
}
