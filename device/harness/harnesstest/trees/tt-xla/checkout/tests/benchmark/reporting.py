# benchfleet fixture: follows tenstorrent/tt-xla tests/benchmark/reporting.py
# (commit 1e68b76c8cccc86b0e3f555afc4bb2c8270f2ed3): the result schema, the
# printed banner, the output-file writer and the TTNN perf-metric
# aggregation.
#
# aggregate_ttnn_perf_metrics reads EVERY file in the WORKING DIRECTORY whose
# name starts with the base name (e.g. tt_xla_resnet50_perf_metrics) and ends
# in .json, and sums their "summary" blocks into config.ttnn_* (plus
# ttnn_num_graphs = how many had one). The plugin writes <base>_<n>.json per
# compiled graph; nothing removes old ones, so files a previous job left in
# the same cwd (another graph count, a crashed run) are counted too.
import json
import os
import socket
from datetime import datetime
from typing import Any, Dict, List, Optional


def get_benchmark_metadata() -> Dict[str, str]:
    return {
        "date": datetime.now().strftime("%d-%m-%Y"),
        "machine_name": socket.gethostname(),
    }


def aggregate_ttnn_perf_metrics(ttnn_perf_metrics_output_file, results):
    base_name = os.path.basename(ttnn_perf_metrics_output_file)
    perf_files = [
        f for f in os.listdir(".") if f.startswith(base_name) and f.endswith(".json")
    ]
    if not perf_files:
        return
    keys = ("total_ops", "total_shardable_ops", "effectively_sharded_ops", "system_memory_ops")
    totals = dict.fromkeys(keys, 0)
    graphs = 0
    for perf_file in sorted(perf_files):
        with open(perf_file) as f:
            data = json.load(f)
        summary = data.get("summary")
        if isinstance(summary, dict):
            for k in keys:
                totals[k] += summary.get(k, 0)
            graphs += 1
    if graphs == 0:
        return
    config = results["config"]
    for k in keys:
        config[f"ttnn_{k}"] = totals[k]
    shardable = totals["total_shardable_ops"]
    config["ttnn_effectively_sharded_percentage"] = (
        totals["effectively_sharded_ops"] / shardable * 100 if shardable > 0 else 0.0
    )
    config["ttnn_num_graphs"] = graphs


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
    evaluation_score: Optional[float] = None,
    batch_size: int = None,
    data_format: str = None,
    input_size: tuple = None,
) -> None:
    rule = "===================================================================="
    print(rule)
    print(f"| {model_title} Benchmark Results:".ljust(67) + "|")
    print("--------------------------------------------------------------------")
    print(f"| Model: {full_model_name}")
    print(f"| Model type: {model_type}")
    print(f"| Dataset name: {dataset_name}")
    print(f"| Date: {date}")
    print(f"| Machine name: {machine_name}")
    print(f"| Total samples: {total_samples}")
    print(f"| Avg. decode time: {total_time}")
    print(f"| Avg. samples per second: {samples_per_sec}")
    if evaluation_score is not None:
        print(f"| Evaluation score: {evaluation_score}")
    if batch_size is not None:
        print(f"| Batch size: {batch_size}")
    if data_format is not None:
        print(f"| Data format: {data_format}")
    if input_size is not None:
        print(f"| Input size: {input_size}")
    print(rule)


def create_measurement(measurement_name, value, step_name, iteration=1,
                       step_warm_up_num_iterations=0, target=-1,
                       device_power=-1.0, device_temperature=-1.0) -> Dict[str, Any]:
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
    evaluation_score: Optional[float] = None,
    custom_measurements: Optional[List[Dict[str, Any]]] = None,
    optimization_level: int = 0,
    program_cache_enabled: bool = False,
    trace_enabled: bool = False,
    experimental_weight_dtype: str = "",
    model_info: str = "",
    display_name: str = "",
    torch_xla_enabled: bool = True,
    backend: str = "tt",
    device_name: str = "",
    arch: str = "",
    input_is_image: bool = True,
    input_sequence_length: Optional[int] = -1,
    device_count: int = 1,
    mesh_shape: Optional[tuple] = None,
) -> Dict[str, Any]:
    measurements = [
        create_measurement("total_samples", total_samples, full_model_name),
        create_measurement("total_time", total_time, full_model_name),
    ]
    if evaluation_score is not None:
        measurements.append(
            create_measurement("evaluation_score", evaluation_score, full_model_name)
        )
    for m in custom_measurements or []:
        measurements.append(create_measurement(
            m["measurement_name"], m["value"], m.get("step_name", full_model_name),
            m.get("iteration", 1), m.get("step_warm_up_num_iterations", 0),
            m.get("target", -1), m.get("device_power", -1.0), m.get("device_temperature", -1.0)))

    config = {
        "model_size": "small",
        "optimization_level": optimization_level,
        "program_cache_enabled": program_cache_enabled,
        "trace_enabled": trace_enabled,
        "experimental_weight_dtype": experimental_weight_dtype,
        "model_info": model_info,
        "display_name": display_name,
    }
    if torch_xla_enabled:
        config.update({"torch_xla_enabled": torch_xla_enabled, "backend": backend})

    image_dimension = ""
    if input_is_image:
        image_dimension = f"{input_size[0]}x{input_size[1]}x{input_size[2]}"

    dims = "_".join(str(d) for d in input_size)
    return {
        "model": full_model_name,
        "model_type": model_type,
        "run_type": f"{'_'.join(full_model_name.split())}_{batch_size}_{dims}_{num_layers}_{loop_count}",
        "config": config,
        "num_layers": num_layers,
        "batch_size": batch_size,
        "precision": data_format,
        "dataset_name": dataset_name,
        "profile_name": "",
        "input_sequence_length": input_sequence_length,
        "output_sequence_length": -1,
        "image_dimension": image_dimension,
        "perf_analysis": False,
        "measurements": measurements,
        "device_info": {
            "device_name": device_name,
            "arch": arch,
            "device_count": device_count,
            "mesh_shape": mesh_shape,
            "device_type": None,
        },
    }


def write_benchmark_json(results, output_file, *, model_rawname, project="tt-forge/tt-xla"):
    """Stamp project/model_rawname and json.dump(indent=2) (not atomically)."""
    results["project"] = project
    results["model_rawname"] = model_rawname
    with open(output_file, "w") as f:
        json.dump(results, f, indent=2)
