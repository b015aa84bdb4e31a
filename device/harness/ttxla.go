package harness

import (
	"path/filepath"
	"strconv"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// TTXLA is the tt-xla benchmark harness, tests/benchmark/ in
// tenstorrent/tt-xla (harnesstest/trees/tt-xla). It differs from forge's:
//   - no marker selects the tests on main (CI lists node ids in
//     .github/workflows/perf-bench-matrix.json), and CI runs
//     `pytest -svv --confcutdir=tests/benchmark <id>`, so tests/conftest.py
//     (which imports the test infrastructure and through it torch_xla) is
//     never loaded;
//   - PYTHONPATH is what venv/activate sets (the checkout and its tests/
//     first, so `infra` resolves);
//   - the options are --batch-size, --num-layers, --optimization-level, ...
//     (no --loop-count, --warmup-count or --data-format: the tests fix
//     their own loop), and a vision test may ignore --batch-size;
//   - the harness judges PCC itself (0.97 by default, 0.90 for some models)
//     and prints "PCC check: Calculated PCC=..., Required PCC=..."; its
//     report has no top-level pcc and its device_info.device_type is null.
type TTXLA struct{}

func init() {
	register(TTXLA{}, "the tt-xla benchmark harness (tests/benchmark, pytest --confcutdir=tests/benchmark)")
}

// Name implements Profile: protocol.RunnerTTXLA.
func (TTXLA) Name() string { return protocol.RunnerTTXLA }

// Check implements Profile. tt-xla has no training mode and no data format
// option (its tests run bfloat16).
func (TTXLA) Check(b protocol.Benchmark) error {
	if b.Training {
		return device.Invalid("training is not supported by the tt-xla harness")
	}
	if b.DataFormat != "" && b.DataFormat != protocol.FormatBfloat16 {
		return device.Invalid("the tt-xla harness has no --data-format option and runs bfloat16 (got %q)", b.DataFormat)
	}
	return requireTest(protocol.RunnerTTXLA, b)
}

// Command implements Profile: tt-xla's call-perf-test.yml, after
// `source venv/activate` in the checkout. The PYTHONPATH is venv/activate's
// (TT_MLIR_HOME = third_party/tt-mlir/src/tt-mlir, TT_METAL_RUNTIME_ROOT
// its third_party/tt-metal/src/tt-metal; SYSTEM_DIST_PACKAGES as it fixes
// it). Only --batch-size is a harness option here; the loop and warmup
// counts are the tests' own.
func (TTXLA) Command(checkout string, b protocol.Benchmark) Command {
	mlir := filepath.Join(checkout, "third_party", "tt-mlir", "src", "tt-mlir")
	metal := filepath.Join(mlir, "third_party", "tt-metal", "src", "tt-metal")
	return Command{
		Select:  []string{"--confcutdir=" + filepath.Join(checkout, "tests", "benchmark")},
		Options: []string{"--batch-size", strconv.Itoa(b.BatchSize)},
		PythonPath: []string{
			checkout,
			filepath.Join(checkout, "tests"),
			"/usr/local/lib/python3.11/dist-packages",
			filepath.Join(checkout, "integrations", "vllm_plugin"),
			filepath.Join(mlir, "build", "python_packages"),
			filepath.Join(metal, "ttnn"),
			filepath.Join(metal, "tools"),
		},
	}
}

// Outcome implements Profile: measurements from the report, the PCC and
// the PCC required from the line the harness prints after its own check
// passed.
func (TTXLA) Outcome(report []byte, _ protocol.Benchmark, sc *Scan) (*device.Outcome, error) {
	rep, err := ParseReport(report)
	if err != nil {
		return nil, device.Failed("%v", err)
	}
	pcc, required, ok := sc.PCC()
	if ok && rep.PCC != nil {
		if err := agreePCC(pcc, *rep.PCC); err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, device.Failed("tt-xla printed no \"PCC check: ... Required PCC=...\" or \"PCC verification passed\" line: cannot confirm the accuracy check")
	}
	return rep.outcome(report, pcc, required), nil
}
