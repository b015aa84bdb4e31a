# benchfleet fixture: equivalent of tenstorrent/tt-forge-onnx
# forge/test/benchmark/test_vision.py (commit 1bf30449a67b35761ca6f4bfc26fac4c487fb3f5).
# As upstream: test_vision (unmarked; pytest collects it, and it errors with
# "fixture 'model' not found" unless -m perf deselects it) and test_resnet50,
# @pytest.mark.perf, parametrized over ModelVariant -> id test_resnet50[resnet_50_hf].
import json

import forge
import pytest
from loguru import logger

from test.benchmark.benchmarks.vision_benchmark import benchmark_vision_forge_onnx
from test.benchmark.options import ForgeBenchmarkOptions

from forge.forge_property_utils import Framework, Source, Task, ModelArch, record_model_properties
from third_party.tt_forge_models.resnet.pytorch.loader import ModelLoader, ModelVariant
from third_party.tt_forge_models.tools.utils import export_torch_model_to_onnx

DEFAULT_OPTIMIZATION_LEVEL = 2
DEFAULT_TRACE_ENABLED = True
DEFAULT_BATCH_SIZE = 8
DEFAULT_LOOP_COUNT = 128
DEFAULT_WARMUP_COUNT = 32
DEFAULT_INPUT_SIZE = (3, 224, 224)
DEFAULT_DATA_FORMAT = "bfloat16"


def test_vision(
    model,
    model_name,
    forge_benchmark_options: ForgeBenchmarkOptions,
    load_inputs_fn,
    extract_output_tensor_fn,
    optimization_level: int = DEFAULT_OPTIMIZATION_LEVEL,
    trace_enabled: bool = DEFAULT_TRACE_ENABLED,
    training: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    input_size: tuple = DEFAULT_INPUT_SIZE,
    loop_count: int = DEFAULT_LOOP_COUNT,
    warmup_count: int = DEFAULT_WARMUP_COUNT,
    data_format: str = DEFAULT_DATA_FORMAT,
    required_pcc: float = 0.99,
):
    """Run the benchmark with CLI overrides applied; write the JSON report if --output-file."""
    o = forge_benchmark_options
    if o.batch_size is not None:
        batch_size = o.batch_size
    if o.loop_count is not None:
        loop_count = o.loop_count
    if o.warmup_count is not None:
        warmup_count = o.warmup_count
    if o.data_format is not None:
        data_format = o.data_format
    training = o.training
    output_file = o.output_file

    logger.info(f"Running Forge ONNX vision benchmark for model: {model_name}")
    logger.info(
        f"""Configuration:
    optimization_level={optimization_level}
    trace_enabled={trace_enabled}
    training={training}
    batch_size={batch_size}
    input_size={input_size}
    loop_count={loop_count}
    warmup_count={warmup_count}
    data_format={data_format}
    required_pcc={required_pcc}
    """
    )

    results = benchmark_vision_forge_onnx(
        model=model,
        model_name=model_name,
        load_inputs_fn=load_inputs_fn,
        extract_output_tensor_fn=extract_output_tensor_fn,
        optimization_level=optimization_level,
        trace_enabled=trace_enabled,
        batch_size=batch_size,
        loop_count=loop_count,
        warmup_count=warmup_count,
        input_size=input_size,
        data_format=data_format,
        required_pcc=required_pcc,
        training=training,
    )

    if output_file:
        results["project"] = "tt-forge/tt-forge-onnx"
        results["model_rawname"] = model_name
        # Written in place (not atomically), only after the PCC check passed.
        with open(output_file, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2)


variants = [
    ModelVariant.RESNET_50_HF,
]


@pytest.mark.perf
@pytest.mark.parametrize("variant", variants)
def test_resnet50(variant, forge_benchmark_options, forge_tmp_path):
    # onnx_resnet_resnet_50_hf_cv_image_cls_hf
    model_name = record_model_properties(
        framework=Framework.ONNX,
        model=ModelArch.RESNET,
        variant=variant.value,
        source=Source.HUGGINGFACE,
        task=Task.CV_IMAGE_CLASSIFICATION,
    )

    opts = forge_benchmark_options
    batch_size = opts.batch_size if opts.batch_size is not None else DEFAULT_BATCH_SIZE
    data_format = opts.data_format if opts.data_format is not None else DEFAULT_DATA_FORMAT

    loader = ModelLoader(variant=variant)
    pytorch_model = loader.load_model()
    pytorch_model.eval()

    inputs = loader.load_inputs(batch_size=batch_size)

    onnx_model = export_torch_model_to_onnx(pytorch_model, str(forge_tmp_path), inputs, model_name, opset_version=17)
    framework_model = forge.OnnxModule(model_name, onnx_model)
    if (opts.data_format or DEFAULT_DATA_FORMAT) == "bfloat16":
        framework_model.set_data_format_override(forge._C.DataFormat.Float16_b)

    def load_inputs_fn(batch_size, dtype_override=None):
        return loader.load_inputs(batch_size=batch_size, dtype_override=dtype_override)

    def extract_output_tensor_fn(output):
        return output

    test_vision(
        model=framework_model,
        model_name=model_name,
        forge_benchmark_options=opts,
        load_inputs_fn=load_inputs_fn,
        extract_output_tensor_fn=extract_output_tensor_fn,
        batch_size=batch_size,
        data_format=data_format,
    )
