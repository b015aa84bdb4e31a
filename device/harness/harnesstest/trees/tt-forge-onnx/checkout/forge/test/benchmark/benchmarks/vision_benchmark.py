# benchfleet fixture: equivalent of tenstorrent/tt-forge-onnx
# forge/test/benchmark/benchmarks/vision_benchmark.py
# (commit 1bf30449a67b35761ca6f4bfc26fac4c487fb3f5). Same flow and output;
# upstream's `import onnx, torch` (used only in annotations) are left out.
from __future__ import annotations

import os
import time
from typing import Callable, Optional

from loguru import logger

import forge
from forge._C import MLIRConfig
from forge.config import CompilerConfig
from forge.verify.compare import calculate_pcc, compare_with_golden

from test.benchmark.utils import (
    create_benchmark_result,
    get_benchmark_metadata,
    print_benchmark_results,
)

WARMUP_STEPS = 32


def get_compiler_cfg(*, optimization_level: int = 2, trace_enabled: bool = True, data_format: str = "bfloat16") -> CompilerConfig:
    mlir_config = (
        MLIRConfig()
        .set_enable_consteval(True)
        .set_optimization_level(optimization_level)
        .set_enable_trace(trace_enabled)
        .set_enable_l1_interleaved_fallback_analysis(True)
        .set_compute_cfg_math_fidelity(forge._C.MathFidelity.HiFi2)
        .set_enable_remove_dead_values(True)
    )
    cfg = CompilerConfig(mlir_config=mlir_config)
    cfg.enable_optimization_passes = True
    if data_format == "bfloat16":
        cfg.default_df_override = forge._C.DataFormat.Float16_b
    return cfg


def configure_device_settings() -> None:
    from forge._C import runtime as forge_runtime

    settings = forge_runtime.experimental.DeviceSettings()
    settings.enable_program_cache = True
    forge_runtime.experimental.configure_devices(settings)


def compile_forge_onnx(model, sample_input, module_name: str, optimization_level: int = 2,
                       trace_enabled: bool = True, data_format: str = "bfloat16"):
    os.environ["TT_METAL_FORCE_REINIT"] = "1"
    compiled = forge.compile(
        model,
        [sample_input],
        module_name=module_name,
        compiler_cfg=get_compiler_cfg(
            optimization_level=optimization_level, trace_enabled=trace_enabled, data_format=data_format
        ),
    )
    configure_device_settings()
    return compiled


def execute_and_measure_fps(compiled, inputs: list, loop_count: int) -> tuple[list, float]:
    """Run compiled loop_count times; print each iteration's and the total wall time.

    Used for both the warmup and the timed loop, so both print the same lines:
    "Iteration {i} took {ms:.04f} ms" and "Total time: {s:.4f}s for {n} iterations".
    """
    predictions = []
    t_start = time.perf_counter_ns()
    for i in range(loop_count):
        t0 = time.perf_counter_ns()
        outputs = compiled(inputs[i % len(inputs)])
        predictions.append(outputs[0])
        t1 = time.perf_counter_ns()
        print(f"Iteration {i} took {(t1 - t0) / 1e6:.04f} ms")
    total_time = (time.perf_counter_ns() - t_start) / 1e9
    print(f"Total time: {total_time:.4f}s for {loop_count} iterations")
    return predictions, total_time


def benchmark_vision_forge_onnx(
    model,
    model_name: str,
    load_inputs_fn: Callable,
    extract_output_tensor_fn: Callable,
    optimization_level: int,
    trace_enabled: bool,
    batch_size: int,
    loop_count: int,
    warmup_count: Optional[int],
    input_size: tuple,
    data_format: str,
    required_pcc: float,
    training: bool,
) -> dict:
    if training:
        raise ValueError("Training mode is not supported")

    inputs = [load_inputs_fn(batch_size) for _ in range(loop_count)]
    golden_output = extract_output_tensor_fn(model(inputs[0]))[0]

    print(f"Compiling ONNX model with Forge ({model_name})...")
    compiled = compile_forge_onnx(
        model,
        inputs[0],
        module_name=model_name,
        optimization_level=optimization_level,
        trace_enabled=trace_enabled,
        data_format=data_format,
    )

    # Warmup actually run: min(32, loop) when not given, else clamp to [0, loop].
    if warmup_count is None:
        warmup_loop_count = min(WARMUP_STEPS, loop_count)
    else:
        warmup_loop_count = min(max(0, warmup_count), loop_count)

    logger.info("Starting warmup...")
    execute_and_measure_fps(compiled=compiled, inputs=inputs[:warmup_loop_count], loop_count=warmup_loop_count)
    logger.info("Warmup completed.")

    logger.info("Starting benchmark...")
    predictions, total_time = execute_and_measure_fps(compiled=compiled, inputs=inputs, loop_count=loop_count)
    logger.info("Benchmark completed.")

    total_samples = batch_size * loop_count
    samples_per_sec = total_samples / total_time if total_time > 0 else float("inf")

    metadata = get_benchmark_metadata()
    model_type = "Vision"
    dataset_name = "Random Data"

    print_benchmark_results(
        model_title=model_name,
        full_model_name=model_name,
        model_type=model_type,
        dataset_name=dataset_name,
        date=metadata["date"],
        machine_name=metadata["machine_name"],
        total_time=total_time,
        total_samples=total_samples,
        samples_per_sec=samples_per_sec,
        batch_size=batch_size,
        data_format=data_format,
        input_size=input_size,
    )

    device_out = predictions[0]
    if not compare_with_golden(golden_output, device_out, pcc=required_pcc):
        pcc_value = float(calculate_pcc(golden_output, device_out))
        raise AssertionError(
            f"Golden comparison failed (compare_with_golden). PCC={pcc_value:.6f}, required={required_pcc}"
        )

    pcc_value = float(calculate_pcc(golden_output, device_out))
    print(f"PCC verification passed with PCC={pcc_value:.6f}")

    result = create_benchmark_result(
        full_model_name=model_name,
        model_type=model_type,
        dataset_name=dataset_name,
        num_layers=-1,
        batch_size=batch_size,
        input_size=input_size,
        loop_count=loop_count,
        data_format=data_format,
        total_time=total_time,
        total_samples=total_samples,
        optimization_level=optimization_level,
        program_cache_enabled=True,
        trace_enabled=trace_enabled,
        model_info=model_name,
        display_name="",
    )
    result["pcc"] = pcc_value
    result["config"]["training"] = training
    result["config"]["warmup_iterations"] = warmup_loop_count
    return result
