# benchfleet fixture: equivalent of tenstorrent/tt-forge-onnx
# forge/test/benchmark/options.py (commit 1bf30449a67b35761ca6f4bfc26fac4c487fb3f5).
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ForgeBenchmarkOptions:
    """Benchmark values parsed from the pytest command line (see conftest.py)."""

    output_file: Optional[str]
    batch_size: Optional[int]
    loop_count: Optional[int]
    warmup_count: Optional[int]
    data_format: Optional[str]
    training: bool
