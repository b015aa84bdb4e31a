# benchfleet fixture: follows tenstorrent/tt-xla tests/benchmark/runtime.py
# (commit 1e68b76c8cccc86b0e3f555afc4bb2c8270f2ed3): the layer that talks to
# the torch-xla runtime. torch_xla is imported lazily here, as upstream.
import socket

# Where the compiler exports compiled modules, relative to the WORKING
# DIRECTORY (CI then copies ./modules/irs/*.mlir and ./modules/*.ttnn).
MODULE_EXPORT_PATH = "modules"


def align_arch(arch: str) -> str:
    for item in ("wormhole", "blackhole"):
        if item in arch:
            return item
    return ""


def get_xla_device_arch() -> str:
    import torch_xla.runtime as xr

    attrs = xr.global_runtime_device_attributes()
    if not attrs:
        return ""
    return align_arch(str(attrs[0]["device_arch"]).lower())


def build_compile_options(*, optimization_level, export_model_name,
                          ttnn_perf_metrics_output_file, enable_trace) -> dict:
    return {
        "optimization_level": optimization_level,
        "enable_trace": enable_trace,
        "export_path": MODULE_EXPORT_PATH,
        "export_model_name": export_model_name,
        "ttnn_perf_metrics_enabled": True,
        "ttnn_perf_metrics_output_file": ttnn_perf_metrics_output_file,
    }


def set_compile_options(**kwargs) -> dict:
    import torch_xla

    options = build_compile_options(**kwargs)
    torch_xla.set_custom_compile_options(options)
    return options


def tt_xla_device_fields() -> dict:
    import torch_xla.runtime as xr

    return {
        "program_cache_enabled": True,
        "torch_xla_enabled": True,
        "backend": "tt",
        "device_name": socket.gethostname(),
        "arch": get_xla_device_arch(),
        "device_count": xr.global_runtime_device_count(),
    }
