"""Validates benchmark JSON lines as Tenstorrent's CompleteBenchmarkRun.

A model of the record's fields and types, as tenstorrent/tt-metal
infra/data_collection/pydantic_models.py defines CompleteBenchmarkRun and
BenchmarkMeasurement (pydantic v2; the loader in tenstorrent/tt-github-actions
collect_data has identical copies). Stricter than upstream on purpose:
extra="forbid" catches a misspelt field, which upstream would drop silently,
and timestamps must carry at most 6 fractional digits.

Usage: python3 complete_benchmark_run.py < export.jsonl
Exit 0 when every line validates; 1 with the first error otherwise; 3 when
pydantic is not installed.
"""

import json
import re
import sys
from datetime import datetime
from typing import List, Optional

try:
    from pydantic import BaseModel, ConfigDict, Field
except ImportError:
    print("pydantic is not installed", file=sys.stderr)
    sys.exit(3)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchmarkMeasurement(Strict):
    step_start_ts: datetime
    step_end_ts: datetime
    iteration: int
    step_name: str
    step_warm_up_num_iterations: Optional[int] = None
    name: str
    value: float
    target: Optional[float] = None
    device_power: Optional[float] = None
    device_temperature: Optional[float] = None


class CompleteBenchmarkRun(Strict):
    run_start_ts: datetime
    run_end_ts: datetime
    run_type: str
    git_repo_name: Optional[str] = None
    git_commit_hash: Optional[str] = None
    git_commit_ts: Optional[datetime] = None
    git_branch_name: Optional[str] = None
    github_pipeline_id: Optional[int] = None
    github_pipeline_link: Optional[str] = None
    github_job_id: Optional[int] = None
    user_name: Optional[str] = None
    docker_image: Optional[str] = None
    device_hostname: str
    device_ip: Optional[str] = None
    device_info: Optional[dict] = None
    ml_model_name: str
    ml_model_type: Optional[str] = None
    num_layers: Optional[int] = None
    batch_size: Optional[int] = None
    config_params: Optional[dict] = None
    precision: Optional[str] = None
    dataset_name: Optional[str] = None
    profiler_name: Optional[str] = None
    input_sequence_length: Optional[int] = None
    output_sequence_length: Optional[int] = None
    image_dimension: Optional[str] = None
    perf_analysis: Optional[bool] = None
    training: Optional[bool] = None
    measurements: List[BenchmarkMeasurement] = Field(...)


TS = re.compile(r'"(run_start_ts|run_end_ts|git_commit_ts|step_start_ts|step_end_ts)":\s*"([^"]*)"')
FRACTION = re.compile(r"\.(\d+)")


def main():
    n = 0
    for i, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        for field, value in TS.findall(line):
            m = FRACTION.search(value)
            if m and len(m.group(1)) > 6:
                print(f"line {i}: {field} {value!r} has more than 6 fractional digits", file=sys.stderr)
                return 1
        try:
            run = CompleteBenchmarkRun.model_validate_json(line)
        except Exception as e:  # pydantic.ValidationError
            print(f"line {i}: {e}", file=sys.stderr)
            return 1
        seen = set()
        for m in run.measurements:
            key = (m.iteration, m.step_name, m.name)
            if key in seen:
                print(f"line {i}: measurement {key} appears twice", file=sys.stderr)
                return 1
            seen.add(key)
        n += 1
    print(f"{n} CompleteBenchmarkRun records valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
