# benchfleet fixture: follows tenstorrent/tt-xla tests/benchmark/test_vision.py
# (commit 0535e57db7b4c30db25690b6fde20b8e2f64d7b4), two of its tests, with
# helpers imported from naming/reporting (upstream 0535e57: from utils).
#
# Every vision test hard-codes its batch size and ignores --batch-size (no
# vision test upstream takes the batch_size fixture):
#   test_resnet50     batch 8,  required PCC 0.90
#   test_mobilenetv2  batch 12, required PCC 0.97 (DEFAULT_REQUIRED_PCC)
# test_vision itself is collected by pytest too (upstream as well) and errors
# at setup (fixture 'model' not found) when the whole file is run.

import os

import torch
from benchmarks.vision_benchmark import benchmark_vision_torch_xla
from naming import resolve_display_name
from reporting import aggregate_ttnn_perf_metrics, write_benchmark_json

# Defaults for all vision models
DEFAULT_OPTIMIZATION_LEVEL = 2
DEFAULT_TRACE_ENABLED = True
DEFAULT_BATCH_SIZE = 1
DEFAULT_LOOP_COUNT = 128
# --- benchfleet fixture, not upstream: FAKE_XLA_LOOP shortens the loop. ---
DEFAULT_LOOP_COUNT = int(os.environ.get("FAKE_XLA_LOOP") or DEFAULT_LOOP_COUNT)
DEFAULT_INPUT_SIZE = (3, 224, 224)  # (channels, height, width)
DEFAULT_DATA_FORMAT = torch.bfloat16
DEFAULT_REQUIRED_PCC = 0.97


def test_vision(
    model,
    model_info_name,
    output_file,
    load_inputs_fn,
    extract_output_tensor_fn,
    request=None,
    optimization_level=DEFAULT_OPTIMIZATION_LEVEL,
    trace_enabled=DEFAULT_TRACE_ENABLED,
    batch_size=DEFAULT_BATCH_SIZE,
    loop_count=DEFAULT_LOOP_COUNT,
    input_size=DEFAULT_INPUT_SIZE,
    data_format=DEFAULT_DATA_FORMAT,
    required_pcc=DEFAULT_REQUIRED_PCC,
):
    """Benchmark one vision model and write the report if output_file is set."""
    resolved_display_name = resolve_display_name(request=request, fallback=model_info_name)
    ttnn_perf_metrics_output_file = f"tt_xla_{resolved_display_name}_perf_metrics"

    print(f"Running vision benchmark for model: {model_info_name}")
    print(
        f"""Configuration:
    optimization_level={optimization_level}
    trace_enabled={trace_enabled}
    batch_size={batch_size}
    loop_count={loop_count}
    input_size={input_size}
    data_format={data_format}
    required_pcc={required_pcc}
    ttnn_perf_metrics_output_file={ttnn_perf_metrics_output_file}
    """
    )

    results = benchmark_vision_torch_xla(
        model=model,
        model_info_name=model_info_name,
        display_name=resolved_display_name,
        optimization_level=optimization_level,
        trace_enabled=trace_enabled,
        batch_size=batch_size,
        loop_count=loop_count,
        input_size=input_size,
        data_format=data_format,
        ttnn_perf_metrics_output_file=ttnn_perf_metrics_output_file,
        load_inputs_fn=load_inputs_fn,
        extract_output_tensor_fn=extract_output_tensor_fn,
        required_pcc=required_pcc,
    )

    if output_file:
        aggregate_ttnn_perf_metrics(ttnn_perf_metrics_output_file, results)
        write_benchmark_json(results, output_file, model_rawname=model_info_name)


def test_mobilenetv2(output_file, request):
    from third_party.tt_forge_models.mobilenetv2.pytorch.loader import (
        ModelLoader,
        ModelVariant,
    )

    data_format = torch.bfloat16
    batch_size = 12

    variant = ModelVariant.MOBILENET_V2_TORCH_HUB
    loader = ModelLoader(variant=variant)
    model_info_name = loader.get_model_info(variant=variant).name
    model = loader.load_model(dtype_override=data_format).eval()

    def load_inputs_fn(batch_size, dtype):
        return loader.load_inputs(dtype_override=dtype, batch_size=batch_size)

    def extract_output_tensor_fn(output):
        return output

    test_vision(
        model=model,
        model_info_name=model_info_name,
        output_file=output_file,
        request=request,
        load_inputs_fn=load_inputs_fn,
        extract_output_tensor_fn=extract_output_tensor_fn,
        batch_size=batch_size,
        data_format=data_format,
    )


def test_resnet50(output_file, request):
    from third_party.tt_forge_models.resnet.pytorch.loader import (
        ModelLoader,
        ModelVariant,
    )

    data_format = torch.bfloat16
    batch_size = 8

    variant = ModelVariant.RESNET_50_HF
    loader = ModelLoader(variant=variant)
    model_info_name = loader.get_model_info(variant=variant).name
    model = loader.load_model(dtype_override=data_format).eval()

    def load_inputs_fn(batch_size, dtype):
        return loader.load_inputs(dtype_override=dtype, batch_size=batch_size)

    def extract_output_tensor_fn(output):
        return output.logits

    test_vision(
        model=model,
        model_info_name=model_info_name,
        output_file=output_file,
        request=request,
        load_inputs_fn=load_inputs_fn,
        extract_output_tensor_fn=extract_output_tensor_fn,
        batch_size=batch_size,
        data_format=data_format,
        required_pcc=0.90,
    )
