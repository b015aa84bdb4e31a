# benchfleet fixture: follows tenstorrent/tt-xla tests/benchmark/conftest.py
# (the --pcc-only version, 2026; index id 56805208575, commit not recorded by
# the index). Options, types and defaults as upstream:
#   --output-file         store, default None
#   --num-layers          positive int (else pytest.UsageError), default None
#   --batch-size          positive int (else pytest.UsageError), default None
#   --accuracy-testing    store_true
#   --optimization-level  0, 1 or 2 (else pytest.UsageError), default None
#   --max-output-tokens   positive int (else pytest.UsageError), default None
#   --decode-only         store_true
#   --check-fusions       store_true
#   --pcc-only, --pcc-prefill, --pcc-decode   store_true
# No marks are added here and pytest.ini registers no `benchmark` mark: on
# main CI selects tests by node id (.github/workflows/perf-bench-matrix.json).
# Note `import torch` at module level: a host without torch fails to load
# THIS conftest even under --confcutdir=tests/benchmark.
from dataclasses import dataclass
from typing import Optional

import pytest
import torch


def make_validator_positive_int(option_name):
    def validate(value):
        try:
            n = int(value)
            if n <= 0:
                raise ValueError
            return n
        except (ValueError, TypeError):
            raise pytest.UsageError(
                f"Invalid value for {option_name}: '{value}'. Must be a positive integer (> 0)."
            )

    return validate


def make_validator_optimization_level(option_name):
    def validate(value):
        try:
            n = int(value)
            if n not in (0, 1, 2):
                raise ValueError
            return n
        except (ValueError, TypeError):
            raise pytest.UsageError(
                f"Invalid value for {option_name}: '{value}'. Must be 0, 1, or 2."
            )

    return validate


def pytest_addoption(parser):
    """Adds the benchmark command-line options to pytest."""
    add = parser.addoption
    add("--output-file", action="store", default=None,
        help="Path to save benchmark results as JSON.")
    add("--num-layers", action="store", default=None,
        type=make_validator_positive_int("--num-layers"),
        help="Number of model layers (positive integer). Overrides model config when supported.")
    add("--batch-size", action="store", default=None,
        type=make_validator_positive_int("--batch-size"),
        help="Batch size (positive integer). Overrides config value.")
    add("--accuracy-testing", action="store_true", default=False,
        help="Enable accuracy testing mode. Uses reference data for TOP1/TOP5 accuracy.")
    add("--optimization-level", action="store", default=None,
        type=make_validator_optimization_level("--optimization-level"),
        help="Optimization level (0, 1, or 2). Overrides default value.")
    add("--max-output-tokens", action="store", default=None,
        type=make_validator_positive_int("--max-output-tokens"),
        help="Limit the maximum number of output tokens generated. Useful for profiling runs.")
    add("--decode-only", action="store_true", default=False,
        help="Run prefill on CPU and only decode on device. Measures decode-only throughput.")
    add("--check-fusions", action="store_true", default=False,
        help="Verify that expected fusion ops are present in the compiled IR.")
    add("--pcc-only", action="store_true", default=False,
        help="LLMs only: skip warmup and the timed perf loop, run a single PCC iteration.")
    add("--pcc-prefill", action="store_true", default=False,
        help="Like --pcc-only but assert prefill PCC only (implies --pcc-only).")
    add("--pcc-decode", action="store_true", default=False,
        help="Like --pcc-only but assert decode PCC only (implies --pcc-only).")


def _option(name):
    @pytest.fixture(name=name.lstrip("-").replace("-", "_"))
    def fixture(request):
        return request.config.getoption(name)

    return fixture


output_file = _option("--output-file")
num_layers = _option("--num-layers")
batch_size = _option("--batch-size")
accuracy_testing = _option("--accuracy-testing")
optimization_level = _option("--optimization-level")
max_output_tokens = _option("--max-output-tokens")
decode_only = _option("--decode-only")
check_fusions = _option("--check-fusions")
pcc_only = _option("--pcc-only")
pcc_prefill = _option("--pcc-prefill")
pcc_decode = _option("--pcc-decode")


@dataclass
class CliOptions:
    """The command-line benchmark options as one object (fixture `cli`)."""

    output_file: Optional[str]
    num_layers: Optional[int]
    batch_size: Optional[int]
    accuracy_testing: bool
    optimization_level: Optional[int]
    max_output_tokens: Optional[int]
    decode_only: bool
    check_fusions: bool
    pcc_only: bool
    pcc_prefill: bool
    pcc_decode: bool


@pytest.fixture
def cli(output_file, num_layers, batch_size, accuracy_testing, optimization_level,
        max_output_tokens, decode_only, check_fusions, pcc_only, pcc_prefill, pcc_decode):
    return CliOptions(output_file, num_layers, batch_size, accuracy_testing,
                      optimization_level, max_output_tokens, decode_only,
                      check_fusions, pcc_only, pcc_prefill, pcc_decode)


@pytest.fixture(autouse=True)
def seed_torch():
    """Seed torch before every benchmark test for reproducible PCC runs."""
    torch.manual_seed(0)
