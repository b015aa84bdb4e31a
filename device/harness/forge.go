package harness

import (
	"strconv"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// Forge is the tt-forge-onnx perf harness, forge/test/benchmark/ in
// tenstorrent/tt-forge-onnx (harnesstest/trees/tt-forge-onnx): tests marked "perf",
// options --batch-size, --loop-count, --warmup-count (positive integers)
// and --data-format (float32 | bfloat16), a report with a top-level pcc.
type Forge struct{}

func init() {
	register(Forge{}, "the tt-forge-onnx perf harness (forge/test/benchmark, pytest -m perf)")
}

// Name implements Profile: protocol.RunnerForge.
func (Forge) Name() string { return protocol.RunnerForge }

// Check implements Profile. The harness raises ValueError for --training
// and needs a pytest node id.
func (Forge) Check(b protocol.Benchmark) error {
	if b.Training {
		return device.Invalid("training is not supported by the forge harness")
	}
	return requireTest(protocol.RunnerForge, b)
}

// Command implements Profile: `pytest -svv -m perf <id> <options>`, as the
// perf workflow runs it from the checkout. env/activate sets no PYTHONPATH;
// run from the checkout, `python -m pytest` has the checkout first on
// sys.path, so the checkout is PYTHONPATH here. The watchdog in
// forge/test/conftest.py reads .test_durations from the working directory
// (it is at the checkout root): without it a hang is caught only after its
// 1800 s default.
func (f Forge) Command(checkout string, b protocol.Benchmark) Command {
	return Command{
		Select:      []string{"-m", "perf"},
		Options:     f.options(b),
		PythonPath:  []string{checkout},
		CwdFiles:    []string{".test_durations"},
		LoopFromJob: true,
	}
}

// options are the harness options. warmup_count is min(32, loop_count)
// when the job leaves it 0 (the harness rejects 0 as a usage error).
func (Forge) options(b protocol.Benchmark) []string {
	format := b.DataFormat
	if format == "" {
		format = protocol.FormatBfloat16
	}
	warmup := b.WarmupCount
	if warmup == 0 {
		warmup = min(32, b.LoopCount)
	}
	return []string{
		"--batch-size", strconv.Itoa(b.BatchSize),
		"--loop-count", strconv.Itoa(b.LoopCount),
		"--warmup-count", strconv.Itoa(warmup),
		"--data-format", format,
	}
}

// Outcome implements Profile: measurements and PCC from the report, which
// upstream writes only after its PCC check passed (so the harness judged
// it; it does not print the PCC it required on a pass).
func (Forge) Outcome(report []byte, _ protocol.Benchmark, sc *Scan) (*device.Outcome, error) {
	rep, err := ParseReport(report)
	if err != nil {
		return nil, device.Failed("%v", err)
	}
	if rep.PCC == nil {
		return nil, device.Failed("upstream report has no pcc: cannot confirm the accuracy check")
	}
	printed, _, ok := sc.PCC()
	if !ok {
		return nil, device.Failed("the harness printed no \"PCC verification passed\" line: its report's pcc %v is unconfirmed", *rep.PCC)
	}
	if err := agreePCC(printed, *rep.PCC); err != nil {
		return nil, err
	}
	return rep.outcome(report, *rep.PCC, 0), nil
}

// requireTest is the check every pytest harness shares: a valid node id.
func requireTest(name string, b protocol.Benchmark) error {
	if b.Test == "" {
		return device.Invalid("benchmark.test is required for the %s runner (a pytest node id)", name)
	}
	if !protocol.ValidTestID(b.Test) {
		return device.Invalid("benchmark.test %q is not a relative pytest node id", b.Test)
	}
	return nil
}

// register adds a profile to the device registry as a harness kind.
func register(p Profile, summary string) {
	device.Register(device.Kind{
		Name: p.Name(), Harness: true, Summary: summary, Check: p.Check,
		New: func(s device.Settings, log zerolog.Logger) (device.Runner, error) {
			return New(p, Config{Workdir: s.Workdir, Python: s.Python, Env: s.Env, TempDir: s.TempDir, HealthProbe: s.HealthProbe, Box: s.Box, Builds: s.Builds}, log)
		},
	})
}
