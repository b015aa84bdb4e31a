"""Stand-in for `python -m pytest` running an upstream perf harness.

Built from the upstream sources (shared/UPSTREAM.md §1-2), read for this:
- tenstorrent/tt-forge-onnx forge/test/benchmark/conftest.py (options and
  their validation), test_vision.py (test_resnet50 parametrized by
  ModelVariant.RESNET_50_HF -> id "50 HF", @pytest.mark.perf; test_vision is
  an unmarked helper), benchmarks/vision_benchmark.py (warmup then timed
  loop, each printing "Iteration {i} took {ms:.04f} ms" and
  "Total time: {s:.4f}s for {n} iterations"; the PCC line or AssertionError),
  utils.py (the banner, create_benchmark_result's keys), and
  forge/test/conftest.py (pytest_runtest_setup writes the node id to
  .pytest_current_test_executing in the working directory; a watchdog
  SIGABRTs a hung test, printing nothing).
- tenstorrent/tt-xla tests/benchmark/conftest.py (options, marks added from
  perf_marks.json: "benchmark", board marks), test_vision.py
  (test_resnet50(output_file, request), batch 8, required_pcc 0.90),
  benchmarks/vision_benchmark.py ("Iteration {i} took {ms:.04} ms",
  "Moving all outputs to CPU took ...", "Total time: {s:.04}s for {n}
  iterations", "PCC verification passed with PCC=..."), reporting.py
  (no top-level pcc, device_info.device_type None, evaluation_score).
- pytest-dev/pytest src/_pytest/config/__init__.py and main.py: conftest
  import failures ("ImportError while loading conftest '...'.") and usage
  errors ("ERROR: ...") go to stderr with exit 4; "ERROR: not found: <arg>"
  with "(no match in any of [...])" exit 4; everything deselected by -m is
  "collected 1 item / 1 deselected / 0 selected" and exit 5.

What is fake: there is no model, compile or device. Iterations sleep
FAKE_ITER_MS (default 2) each. Test behaviour is controlled by environment
variables the test puts in the harness's configured env:
  FAKE_PCC          PCC the "device" reaches (default 0.998765)
  FAKE_HANG_DEVICES comma list of TT_VISIBLE_DEVICES values on which the
                    test hangs after compile
  FAKE_WATCHDOG_S   with a hang: SIGABRT after this many seconds, as the
                    upstream watchdog does (default: hang until killed)
  FAKE_ENV_DUMP     write the environment the harness got to this file (JSON)
  FAKE_ARCH         device_info.arch (default wormhole)
  FAKE_SYSFS        a tt-kmd sysfs root: the "board" draws power there while
                    it runs (hwmon power1_input/temp1_input of the visible
                    device): 50 W / 45 C in the warmup, 100+i W / 60+i/2 C
                    in timed iteration i (the real board's sensors move; a
                    fake must move them itself)
The interpreter's "site-packages" (beside the wrapper, see harnesstest.go)
must hold the forge wheel (tt-forge-onnx) or torch (tt-xla): without it the
conftest cannot be imported, as on a host whose environment is broken.
"""

import json
import os
import signal
import socket
import sys
import time

USAGE = "usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]"


def err(*lines):
    for line in lines:
        print(line, file=sys.stderr)
    sys.stderr.flush()


def usage_error(msg):
    # pytest's print_usage_error: "ERROR: {msg}\n" per message, stderr, exit 4.
    err("ERROR: " + msg, "")
    sys.exit(4)


def argparse_error(msg):
    # PytestArgumentParser.error via UsageError.
    err("ERROR: " + USAGE, "__main__.py: error: " + msg, "")
    sys.exit(4)


def positive_int(name, value):
    try:
        v = int(value)
        if v <= 0:
            raise ValueError
        return v
    except (ValueError, TypeError):
        usage_error(f"Invalid value for {name}: '{value}'. Must be a positive integer (> 0).")


# The upstream tests each fake knows, by checkout layout: rel path -> {test
# name -> marks}. A parametrized test lists its ids.
FORGE_TESTS = {
    "forge/test/benchmark/test_vision.py": {
        "test_resnet50[50 HF]": ["perf", "parametrize"],
        "test_vision": [],
    },
}
XLA_TESTS = {
    # perf_marks.json: "test_vision.py::test_resnet50": ["benchmark","n150","p150"]
    "tests/benchmark/test_vision.py": {
        "test_resnet50": ["benchmark", "n150", "p150"],
        "test_vision": [],
    },
}


def eval_marks(expr, marks):
    # -m expressions: identifiers with and/or/not and parentheses.
    tokens = expr.replace("(", " ( ").replace(")", " ) ").split()
    out = []
    for t in tokens:
        if t in ("and", "or", "not", "(", ")"):
            out.append(t)
        elif t.replace("_", "").isalnum():
            out.append("True" if t in marks else "False")
        else:
            argparse_error(f"Wrong expression passed to '-m': {expr}")
    return eval(" ".join(out) or "True", {"__builtins__": {}})


def main(argv):
    if argv[:2] != ["-m", "pytest"]:
        err("fake python: only -m pytest is supported")
        return 2
    args = argv[2:]
    opts = {"--output-file": None, "--batch-size": None, "--loop-count": None, "--warmup-count": None,
            "--data-format": None, "--rootdir": None, "-m": "", "-o": [], "--num-layers": None,
            "--optimization-level": None, "--max-output-tokens": None}
    flags = set()
    paths = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-svv", "-s", "-v", "-vv", "--training", "--accuracy-testing", "--decode-only"):
            flags.add(a)
        elif a in opts:
            if i + 1 >= len(args):
                argparse_error(f"argument {a}: expected one argument")
            if a == "-o":
                opts[a].append(args[i + 1])
            else:
                opts[a] = args[i + 1]
            i += 1
        elif a.startswith("-"):
            argparse_error(f"unrecognized arguments: {a}")
        else:
            paths.append(a)
        i += 1

    rootdir = opts["--rootdir"] or os.getcwd()
    if os.path.isdir(os.path.join(rootdir, "forge", "test", "benchmark")):
        harness, tests, wheel = "forge", FORGE_TESTS, "forge"
        conftest = os.path.join(rootdir, "forge", "test", "conftest.py")
        missing = "No module named 'forge'"
    else:
        harness, tests, wheel = "tt-xla", XLA_TESTS, "torch"
        conftest = os.path.join(rootdir, "tests", "benchmark", "conftest.py")
        missing = "No module named 'torch'"

    # Initial conftests load before options are parsed.
    site = os.environ.get("FAKE_SITE_PACKAGES", "")
    if not os.path.isfile(os.path.join(site, wheel, "__init__.py")):
        err(f"ImportError while loading conftest '{conftest}'.",
            f"{os.path.relpath(conftest, rootdir)}:7: in <module>",
            f"    import {wheel}",
            f"E   ModuleNotFoundError: {missing}")
        return 4

    if harness == "forge":
        batch = positive_int("--batch-size", opts["--batch-size"]) if opts["--batch-size"] is not None else None
        loop = positive_int("--loop-count", opts["--loop-count"]) if opts["--loop-count"] is not None else None
        warm = positive_int("--warmup-count", opts["--warmup-count"]) if opts["--warmup-count"] is not None else None
        fmt = opts["--data-format"] or "bfloat16"
        if fmt not in ("float32", "bfloat16"):
            argparse_error(f"argument --data-format: invalid choice: '{fmt}' (choose from 'float32', 'bfloat16')")
    else:
        for o in ("--loop-count", "--warmup-count", "--data-format"):
            if opts[o] is not None:
                argparse_error(f"unrecognized arguments: {o}")
        if opts["--batch-size"] is not None:
            positive_int("--batch-size", opts["--batch-size"])

    print("============================= test session starts ==============================")
    print(f"platform linux -- Python {sys.version.split()[0]}, pytest-8.3.4, pluggy-1.5.0 -- {sys.executable}")
    print(f"rootdir: {rootdir}")

    selected, errors = [], []
    for p in paths:
        path, _, name = p.partition("::")
        rel = os.path.relpath(os.path.abspath(path), rootdir)
        if not os.path.isfile(path) or rel not in tests:
            errors.append(f"file or directory not found: {p}")
            continue
        names = [name] if name else list(tests[rel])
        for n in names:
            if n not in tests[rel]:
                if not n.endswith("]") and any(k.startswith(n + "[") for k in tests[rel]):
                    names.extend(k for k in tests[rel] if k.startswith(n + "["))
                    continue
                errors.append(f"not found: {p}\n(no match in any of [<Module {os.path.basename(path)}>])")
                continue
            selected.append((rel + "::" + n, tests[rel][n]))
    chosen = [(n, m) for n, m in selected if eval_marks(opts["-m"], m)]
    collected = f"collecting ... collected {len(selected)} item{'s' if len(selected) != 1 else ''}"
    if not errors and len(chosen) < len(selected):
        # terminal.py report_collect: " / N deselected / M selected"
        collected += f" / {len(selected) - len(chosen)} deselected / {len(chosen)} selected"
    print(collected)
    if errors:
        print("\n============================ no tests ran in 0.01s =============================")
        for e in errors:
            err("ERROR: " + e, "")
        return 4
    if not chosen:
        print(f"\n============================ {len(selected)} deselected in 0.01s =============================")
        return 5
    if len(chosen) != 1:
        err("fake pytest: runs exactly one test")
        return 3

    nodeid = chosen[0][0]
    with open(".pytest_current_test_executing", "w") as f:  # forge/test/conftest.py
        f.write(nodeid)
    dump = os.environ.get("FAKE_ENV_DUMP")
    if dump:
        with open(dump, "w") as f:
            json.dump(dict(os.environ), f)
    print(nodeid + " ", end="", flush=True)
    if harness == "forge":
        return forge_test(nodeid, batch, loop, warm, fmt, "--training" in flags, opts["--output-file"])
    return xla_test(nodeid, opts["--output-file"])


def loguru(msg):
    err(time.strftime("%Y-%m-%d %H:%M:%S") + ".000 | INFO     | test.benchmark:benchmark:1 - " + msg)


def hang_if_asked():
    visible = os.environ.get("TT_VISIBLE_DEVICES", "")
    if visible and visible in os.environ.get("FAKE_HANG_DEVICES", "").split(","):
        wd = os.environ.get("FAKE_WATCHDOG_S")
        if wd:
            time.sleep(float(wd))
            os.kill(os.getpid(), signal.SIGABRT)  # the watchdog prints nothing
        while True:
            time.sleep(3600)


def draw(power_w, temp_c):
    root = os.environ.get("FAKE_SYSFS")
    visible = os.environ.get("TT_VISIBLE_DEVICES", "").split(",")[0]
    if not root or not visible:
        return
    d = os.path.join(root, f"tenstorrent!{visible}", "device", "hwmon", "hwmon0")
    for name, value in (("power1_input", int(power_w * 1e6)), ("temp1_input", int(temp_c * 1e3))):
        tmp = os.path.join(d, f".{name}.tmp")
        with open(tmp, "w") as f:
            f.write(f"{value}\n")
        os.replace(tmp, os.path.join(d, name))


def loop(n, fmt, timed=False):
    per = float(os.environ.get("FAKE_ITER_MS", "2"))
    start = time.perf_counter_ns()
    for i in range(n):
        if timed:
            draw(100 + i, 60 + i / 2)
        else:
            draw(50, 45)
        t0 = time.perf_counter_ns()
        time.sleep(per / 1000)
        t1 = time.perf_counter_ns()
        print(f"Iteration {i} took {format((t1 - t0) / 1e6, fmt)} ms", flush=True)
    return (time.perf_counter_ns() - start) / 1e9


def device_info(include_mesh):
    arch = os.environ.get("FAKE_ARCH", "wormhole")
    count = len([d for d in os.environ.get("TT_VISIBLE_DEVICES", "").split(",") if d])
    info = {"device_name": socket.gethostname(), "arch": arch, "device_count": count}
    if include_mesh:
        info["mesh_shape"] = [1, count]
        info["device_type"] = None
    else:
        info["device_type"] = {("wormhole", 1): "n150", ("wormhole", 2): "n300",
                               ("blackhole", 1): "p150", ("blackhole", 2): "p300"}.get((arch, count), "unknown")
    return info


def forge_test(nodeid, batch, loop_count, warmup_count, fmt, training, output_file):
    # test_resnet50 with DEFAULT_BATCH_SIZE 8, DEFAULT_LOOP_COUNT 128.
    batch = batch or 8
    loop_count = loop_count or 128
    model = "onnx_resnet_50_hf_cv_image_cls_hf"  # record_model_properties(...)
    loguru(f"Running Forge ONNX vision benchmark for model: {model}")
    loguru(f"Configuration:\n    training={training}\n    batch_size={batch}\n    loop_count={loop_count}\n"
           f"    warmup_count={warmup_count or 32}\n    data_format={fmt}\n    required_pcc=0.99\n    ")
    if training:
        print("FAILED")
        err("E       ValueError: Training mode is not supported")
        return 1
    print(f"Compiling ONNX model with Forge ({model})...", flush=True)
    hang_if_asked()
    warm = min(32, loop_count) if warmup_count is None else min(max(0, warmup_count), loop_count)
    loguru("Starting warmup...")
    wt = loop(warm, ".04f")
    print(f"Total time: {wt:.4f}s for {warm} iterations", flush=True)
    loguru("Warmup completed.")
    loguru("Starting benchmark...")
    total = loop(loop_count, ".04f", timed=True)
    print(f"Total time: {total:.4f}s for {loop_count} iterations", flush=True)
    loguru("Benchmark completed.")
    samples = batch * loop_count
    print("====================================================================")
    print(f"| {model} Benchmark Results:".ljust(67) + "|")
    print("--------------------------------------------------------------------")
    print(f"| Model: {model}")
    print("| Model type: Vision")
    print("| Dataset name: Random Data")
    print(f"| Date: {time.strftime('%d-%m-%Y')}")
    print(f"| Machine name: {socket.gethostname()}")
    print(f"| Total execution time: {total:.4f}s")
    print(f"| Total samples: {samples}")
    print(f"| Sample per second: {samples / total:.2f}")
    print(f"| Batch size: {batch}")
    print(f"| Data format: {fmt}")
    print("| Input size: (3, 224, 224)")
    print("====================================================================")
    pcc = float(os.environ.get("FAKE_PCC", "0.998765"))
    if pcc < 0.99:
        print("FAILED")
        err(f"E       AssertionError: Golden comparison failed (compare_with_golden). PCC={pcc:.6f}, required=0.99")
        print(f"=========================== 1 failed in {total:.2f}s ============================")
        return 1
    print(f"PCC verification passed with PCC={pcc:.6f}")
    if output_file:
        meas = [{"iteration": 1, "step_name": model, "step_warm_up_num_iterations": 0, "measurement_name": name,
                 "value": value, "target": -1, "device_power": -1.0, "device_temperature": -1.0}
                for name, value in (("total_samples", samples), ("total_time", total))]
        result = {
            "model": model, "model_type": "Vision",
            "run_type": f"{model}_{batch}_3_224_224_-1_{loop_count}",
            "config": {"model_size": "small", "optimization_level": 2, "program_cache_enabled": True,
                       "trace_enabled": True, "model_info": model, "display_name": "", "backend": "tt",
                       "training": training, "warmup_iterations": warm},
            "num_layers": -1, "batch_size": batch, "precision": fmt, "dataset_name": "Random Data",
            "profile_name": "", "input_sequence_length": -1, "output_sequence_length": -1,
            "image_dimension": "3x224x224", "perf_analysis": False, "measurements": meas,
            "device_info": device_info(False), "pcc": pcc,
            "project": "tt-forge/tt-forge-onnx", "model_rawname": model,
        }
        with open(output_file, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    print("PASSED")
    print(f"============================== 1 passed in {total:.2f}s ===============================")
    return 0


def xla_test(nodeid, output_file):
    # tests/benchmark/test_vision.py::test_resnet50: batch 8, loop 128
    # (DEFAULT_LOOP_COUNT), required_pcc 0.90, warmup min(32, loop).
    batch, loop_count, required = 8, int(os.environ.get("FAKE_XLA_LOOP", "128")), 0.90
    # loader.get_model_info(variant).name comes from tt_forge_models, not
    # read here: a stand-in name.
    model = "resnet_50_hf"
    print(f"Running vision benchmark for model: {model}")
    print(f"Configuration:\n    optimization_level=2\n    trace_enabled=True\n    batch_size={batch}\n"
          f"    loop_count={loop_count}\n    input_size=(3, 224, 224)\n    data_format=torch.bfloat16\n"
          f"    required_pcc={required}\n    ")
    hang_if_asked()
    warm = min(32, loop_count)
    print("Starting warmup...")
    wt = loop(warm, ".04")
    print("Moving all outputs to CPU took 0.5 ms")
    print(f"Total time: {format(wt, '.04')}s for {warm} iterations")
    print("Warmup completed.")
    print("Starting benchmark...")
    total = loop(loop_count, ".04", timed=True)
    print("Moving all outputs to CPU took 0.5 ms")
    print(f"Total time: {format(total, '.04')}s for {loop_count} iterations", flush=True)
    print("Benchmark completed.")
    samples = batch * loop_count
    print("====================================================================")
    print(f"| {model} Benchmark Results:".ljust(67) + "|")
    print("--------------------------------------------------------------------")
    print(f"| Model: {model}")
    print("| Model type: Vision, Random Input Data")
    print(f"| Total samples: {samples}")
    print(f"| Avg. samples per second: {samples / total}")
    print("====================================================================")
    pcc = float(os.environ.get("FAKE_PCC", "0.998765"))
    if pcc < required:
        print("FAILED")
        err(f"E       AssertionError: PCC verification failed. PCC={pcc:.6f}, Required PCC={required}")
        return 1
    print(f"PCC verification passed with PCC={pcc:.6f}")
    if output_file:
        meas = [{"iteration": 1, "step_name": model, "step_warm_up_num_iterations": 0, "measurement_name": name,
                 "value": value, "target": -1, "device_power": -1.0, "device_temperature": -1.0}
                for name, value in (("total_samples", samples), ("total_time", total), ("evaluation_score", 0.0))]
        result = {
            "model": model, "model_type": "Vision",
            "run_type": f"{model}_{batch}_3_224_224_-1_{loop_count}",
            "config": {"model_size": "small", "optimization_level": 2, "program_cache_enabled": True,
                       "trace_enabled": True, "experimental_weight_dtype": "", "model_info": model,
                       "display_name": "", "torch_xla_enabled": True, "backend": "tt"},
            "num_layers": -1, "batch_size": batch, "precision": "torch.bfloat16", "dataset_name": "Random Data",
            "profile_name": "", "input_sequence_length": -1, "output_sequence_length": -1,
            "image_dimension": "3x224x224", "perf_analysis": False, "measurements": meas,
            "device_info": device_info(True), "project": "tt-forge/tt-xla", "model_rawname": model,
        }
        with open(output_file, "w") as f:
            json.dump(result, f, indent=2)
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
