# benchfleet fixture: equivalent of tenstorrent/tt-forge-onnx
# forge/test/benchmark/utils.py (commit 1bf30449a67b35761ca6f4bfc26fac4c487fb3f5).
import socket
from datetime import datetime
from typing import Any, Dict

from forge.forge_property_utils import get_device_arch, get_device_count, get_device_type


def get_benchmark_metadata() -> Dict[str, str]:
    return {
        "date": datetime.now().strftime("%d-%m-%Y"),
        "machine_name": socket.gethostname(),
    }


def print_benchmark_results(
    model_title: str,
    full_model_name: str,
    model_type: str,
    dataset_name: str,
    date: str,
    machine_name: str,
    total_time: float,
    total_samples: int,
    samples_per_sec: float,
    batch_size: int,
    data_format: str,
    input_size: tuple,
) -> None:
    """The `| Key: value` banner, to stdout (same lines and formats as upstream)."""
    rule = "=" * 68
    rows = [
        ("Model", full_model_name),
        ("Model type", model_type),
        ("Dataset name", dataset_name),
        ("Date", date),
        ("Machine name", machine_name),
        ("Total execution time", f"{total_time:.4f}s"),
        ("Total samples", total_samples),
        ("Sample per second", f"{samples_per_sec:.2f}"),
        ("Batch size", batch_size),
        ("Data format", data_format),
        ("Input size", input_size),
    ]
    print(rule)
    print(f"| {model_title} Benchmark Results:".ljust(67) + "|")
    print("-" * 68)
    for key, value in rows:
        print(f"| {key}: {value}")
    print(rule)


def create_measurement(
    measurement_name: str,
    value: Any,
    step_name: str,
    iteration: int = 1,
    step_warm_up_num_iterations: int = 0,
    target: float = -1,
    device_power: float = -1.0,
    device_temperature: float = -1.0,
) -> Dict[str, Any]:
    return {
        "iteration": iteration,
        "step_name": step_name,
        "step_warm_up_num_iterations": step_warm_up_num_iterations,
        "measurement_name": measurement_name,
        "value": value,
        "target": target,
        "device_power": device_power,
        "device_temperature": device_temperature,
    }


def create_benchmark_result(
    full_model_name: str,
    model_type: str,
    dataset_name: str,
    num_layers: int,
    batch_size: int,
    input_size: tuple,
    loop_count: int,
    data_format: str,
    total_time: float,
    total_samples: int,
    optimization_level: int = 2,
    program_cache_enabled: bool = True,
    trace_enabled: bool = False,
    model_info: str = "",
    display_name: str = "",
) -> Dict[str, Any]:
    """The report dict (vision_benchmark adds pcc and config.training/warmup_iterations;
    test_vision adds project and model_rawname)."""
    measurements = [
        create_measurement("total_samples", total_samples, full_model_name),
        create_measurement("total_time", total_time, full_model_name),
    ]

    config = {
        "model_size": "small",
        "optimization_level": optimization_level,
        "program_cache_enabled": program_cache_enabled,
        "trace_enabled": trace_enabled,
        "model_info": model_info,
        "display_name": display_name,
        "backend": "tt",
    }

    image_dimension = f"{input_size[0]}x{input_size[1]}x{input_size[2]}"
    run_type = f"{'_'.join(full_model_name.split())}_{batch_size}_{'_'.join([str(dim) for dim in input_size])}_{num_layers}_{loop_count}"

    arch = get_device_arch()
    device_count = get_device_count()

    return {
        "model": full_model_name,
        "model_type": model_type,
        "run_type": run_type,
        "config": config,
        "num_layers": num_layers,
        "batch_size": batch_size,
        "precision": data_format,
        "dataset_name": dataset_name,
        "profile_name": "",
        "input_sequence_length": -1,
        "output_sequence_length": -1,
        "image_dimension": image_dimension,
        "perf_analysis": False,
        "measurements": measurements,
        "device_info": {
            "device_name": socket.gethostname(),
            "arch": arch,
            "device_count": device_count,
            "device_type": get_device_type(arch, device_count),
        },
    }
