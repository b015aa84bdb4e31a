package harness

import (
	"strconv"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// TTXLA is the tt-xla benchmark harness, tests/benchmark/ in
// tenstorrent/tt-xla (shared/UPSTREAM.md §2). It differs from forge's:
// tests are selected by marks that tests/benchmark/conftest.py adds from
// perf_marks.json ("benchmark" for perf runs), the options are
// --batch-size, --num-layers, --max-output-tokens, --optimization-level,
// --accuracy-testing (no --loop-count, --warmup-count or --data-format:
// the tests fix their own loop of 128 with a warmup of min(32, loop)), the
// report has no top-level pcc (the PCC is the "PCC verification passed
// with PCC=..." line) and its device_info.device_type is null.
type TTXLA struct{}

func init() { register(TTXLA{}, "the tt-xla benchmark harness (tests/benchmark, pytest -m benchmark)") }

// Name implements Profile: protocol.RunnerTTXLA.
func (TTXLA) Name() string { return protocol.RunnerTTXLA }

// Marker implements Profile: perf_marks.json marks perf tests "benchmark".
func (TTXLA) Marker() string { return "benchmark" }

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

// Options implements Profile: only --batch-size is a harness option; the
// loop and warmup counts are the tests' own.
func (TTXLA) Options(b protocol.Benchmark) []string {
	return []string{"--batch-size", strconv.Itoa(b.BatchSize)}
}

// Outcome implements Profile: measurements from the report, the PCC from
// the line the harness prints after its own check passed.
func (TTXLA) Outcome(report []byte, _ protocol.Benchmark, sc *Scan) (*device.Outcome, error) {
	rep, err := ParseReport(report)
	if err != nil {
		return nil, device.Failed("%v", err)
	}
	pcc, ok := sc.PCC()
	if rep.PCC != nil {
		pcc, ok = *rep.PCC, true
	}
	if !ok {
		return nil, device.Failed("tt-xla printed no \"PCC verification passed\" line and its report has no pcc: cannot confirm the accuracy check")
	}
	return rep.outcome(report, pcc), nil
}
