# benchfleet fixture: follows tenstorrent/tt-xla
# tests/benchmark/benchmarks/vision_benchmark.py (commit
# 0535e57db7b4c30db25690b6fde20b8e2f64d7b4), with its helpers imported from
# the accuracy/naming/reporting/runtime split of commits 6731074 / 1e68b76
# (0535e57 imports them from utils.py). Module level imports torch_xla: a
# host without it fails to import the test module.
#
# Prints, in order (stdout):
#   Starting warmup...
#   Iteration <i> took <ms:.04> ms            i = 0 .. W-1, W = min(32, loop)
#   Moving all outputs to CPU took <ms:.04> ms
#   Total time: <s:.04>s for <W> iterations
#   Warmup completed.
#   Starting benchmark...
#   Iteration <i> took <ms:.04> ms            i = 0 .. loop-1
#   Moving all outputs to CPU took <ms:.04> ms
#   Total time: <s:.04>s for <loop> iterations
#   Benchmark completed.
#   ==== banner (reporting.print_benchmark_results) ====
#   PCC verification passed with PCC=<pcc:.6f>   (accuracy.assert_pcc)

import socket
import time

import torch
import torch.nn as nn
import torch_xla
import torch_xla.runtime as xr
from accuracy import assert_pcc
from naming import build_xla_export_name
from reporting import create_benchmark_result, get_benchmark_metadata, print_benchmark_results
from runtime import MODULE_EXPORT_PATH, get_xla_device_arch

xr.set_device_type("TT")

WARMUP_STEPS = 32


def execute_and_measure_fps(model, inputs, device, loop_count, extract_output_tensor_fn):
    """Run loop_count forwards, then move every output to CPU.

    Returns (predictions on CPU, total time in seconds)."""
    start_time = time.perf_counter_ns()
    with torch.no_grad():
        outputs = []
        for i in range(loop_count):
            start_iteration_time = time.perf_counter_ns()
            if isinstance(inputs[i], (tuple, list)):
                output = model(*tuple(t.to(device) for t in inputs[i]))
            else:
                output = model(inputs[i].to(device))
            outputs.append(extract_output_tensor_fn(output))
            end_iteration_time = time.perf_counter_ns()
            print(
                f"Iteration {i} took {(end_iteration_time - start_iteration_time) / 1e6:.04} ms"
            )

        start_to_cpu_time = time.perf_counter_ns()
        predictions = [out.to("cpu") for out in outputs]
        end_to_cpu_time = time.perf_counter_ns()
        print(
            f"Moving all outputs to CPU took {(end_to_cpu_time - start_to_cpu_time) / 1e6:.04} ms"
        )

    total_time = time.perf_counter_ns() - start_time
    print(f"Total time: {total_time / 1e9:.04}s for {loop_count} iterations")
    return predictions, total_time / 1e9


def benchmark_vision_torch_xla(
    model,
    model_info_name,
    optimization_level,
    trace_enabled,
    batch_size,
    loop_count,
    input_size,
    data_format,
    ttnn_perf_metrics_output_file,
    load_inputs_fn,
    extract_output_tensor_fn,
    display_name=None,
    required_pcc=0.97,
):
    """Compile a vision model for the TT backend, time loop_count forwards
    after a warmup of min(32, loop_count), and check PCC against CPU."""
    framework_model = model

    inputs = [load_inputs_fn(batch_size, data_format) for _ in range(loop_count)]

    # Golden output on CPU
    golden_input = inputs[0]
    with torch.no_grad():
        if isinstance(golden_input, (tuple, list)):
            golden_output = framework_model(*golden_input)
        else:
            golden_output = framework_model(golden_input)
        golden_output = extract_output_tensor_fn(golden_output)

    export_model_name = build_xla_export_name(
        model_name=display_name,
        num_layers=None,
        batch_size=batch_size,
        input_sequence_length=None,
    )
    options = {
        "optimization_level": optimization_level,
        "export_path": MODULE_EXPORT_PATH,
        "export_model_name": export_model_name,
        "ttnn_perf_metrics_enabled": True,
        "ttnn_perf_metrics_output_file": ttnn_perf_metrics_output_file,
        "enable_trace": trace_enabled,
    }
    torch_xla.set_custom_compile_options(options)

    framework_model.compile(backend="tt")
    device = torch_xla.device()

    # Unused BatchNorm buffers would make an extra XLA graph.
    for m in framework_model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            m.num_batches_tracked = None

    framework_model = framework_model.to(device, dtype=data_format)

    print("Starting warmup...")
    warmup_loop_count = min(WARMUP_STEPS, loop_count)
    execute_and_measure_fps(
        model=framework_model,
        inputs=inputs[:warmup_loop_count],
        device=device,
        loop_count=warmup_loop_count,
        extract_output_tensor_fn=extract_output_tensor_fn,
    )
    print("Warmup completed.")

    print("Starting benchmark...")
    predictions, total_time = execute_and_measure_fps(
        model=framework_model,
        inputs=inputs,
        device=device,
        loop_count=loop_count,
        extract_output_tensor_fn=extract_output_tensor_fn,
    )
    print("Benchmark completed.")

    total_samples = batch_size * loop_count
    samples_per_sec = total_samples / total_time
    metadata = get_benchmark_metadata()

    full_model_name = model_info_name
    model_type = "Vision, Random Input Data"
    dataset_name = "Random Data"
    num_layers = -1

    if data_format == torch.bfloat16:
        data_format_str = "bfloat16"
    elif data_format == torch.float32:
        data_format_str = "float32"
    else:
        raise ValueError(f"Unsupported data format: {data_format}")

    evaluation_score = 0.0
    print_benchmark_results(
        model_title=full_model_name,
        full_model_name=full_model_name,
        model_type=model_type,
        dataset_name=dataset_name,
        date=metadata["date"],
        machine_name=metadata["machine_name"],
        total_time=total_time,
        total_samples=total_samples,
        samples_per_sec=samples_per_sec,
        evaluation_score=evaluation_score,
        batch_size=batch_size,
        data_format=data_format_str,
        input_size=input_size,
    )

    assert_pcc(predictions[0], golden_output, required_pcc)

    return create_benchmark_result(
        full_model_name=full_model_name,
        model_type=model_type,
        dataset_name=dataset_name,
        num_layers=num_layers,
        batch_size=batch_size,
        input_size=input_size,
        loop_count=loop_count,
        data_format=data_format_str,
        total_time=total_time,
        total_samples=total_samples,
        evaluation_score=evaluation_score,
        optimization_level=optimization_level,
        program_cache_enabled=True,
        trace_enabled=trace_enabled,
        model_info=model_info_name,
        display_name=display_name,
        torch_xla_enabled=True,
        backend="tt",
        device_name=socket.gethostname(),
        arch=get_xla_device_arch(),
        device_count=xr.global_runtime_device_count(),
    )
