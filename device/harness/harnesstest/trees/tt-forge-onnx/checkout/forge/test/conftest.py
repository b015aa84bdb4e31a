# benchfleet fixture: small equivalent of tenstorrent/tt-forge-onnx
# forge/test/conftest.py (commit 14bedc0cb9ff26bc982f7f527424ea1d2c53c48b).
# Kept as upstream: the watchdog and pytest_runtest_setup (node id written to
# ./.pytest_current_test_executing), pytest_sessionstart's
# PYTEST_PRINT_ENV_VARIABLES dump, the autouse fixtures, the options,
# pytest_generate_tests, --tests_to_filter, and the ExitTest wrapper.
# Dropped: numpy/torch/tensorflow imports and thread setup, the makereport hook
# (test.exception_utils), pytest_cmdline_preparse (--no-skips).
# The only fake: FAKE_WATCHDOG_SCALE (marked below).
import os
from loguru import logger  # noqa: F401
import subprocess
import fnmatch
import signal
import threading
import json

import pytest

import forge
from forge.config import CompilerConfig  # noqa: F401
from forge.verify.config import TestKind
from forge.tvm_to_python import ExitTest

import test.utils

collect_ignore = ["legacy_tests"]

watchdog_timer_default = 1800  # default expiration in seconds (test not in .test_durations)
watchdog_timer_minimum = 300  # minimum expiration in seconds
watchdog_abort_timer = None
watchdog_test_durations = None

# --- FAKE (benchfleet fixture): FAKE_WATCHDOG_SCALE multiplies every watchdog
# time (the 2x recorded duration, the 300 s minimum and the 1800 s default) so
# tests can see it fire in milliseconds. Not in upstream.
_FAKE_WATCHDOG_SCALE = float(os.environ.get("FAKE_WATCHDOG_SCALE", "1"))
# --- end FAKE


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    def send_abort_signal():
        # Upstream prints nothing here (its print is commented out): the
        # process just gets SIGABRT, and pytest's faulthandler prints
        # "Fatal Python error: Aborted" and the thread tracebacks.
        os.kill(os.getpid(), signal.SIGABRT)

    def reset_abort_timer(timeout=watchdog_timer_default):
        global watchdog_abort_timer
        if watchdog_abort_timer:
            watchdog_abort_timer.cancel()
        timeout = timeout * _FAKE_WATCHDOG_SCALE  # FAKE: see above
        watchdog_abort_timer = threading.Timer(timeout, send_abort_signal)
        watchdog_abort_timer.daemon = True
        watchdog_abort_timer.start()

    def check_test_durations(tst):
        global watchdog_test_durations, watchdog_timer_default, watchdog_timer_minimum
        if watchdog_test_durations is None:
            try:
                # Relative path: the working directory's .test_durations, not the checkout's.
                with open(".test_durations", "r") as f:
                    watchdog_test_durations = json.load(f)
            except (FileNotFoundError, json.JSONDecodeError):
                watchdog_test_durations = {}

        if tst in watchdog_test_durations:
            duration = watchdog_test_durations[tst] * 2
            if duration < watchdog_timer_minimum:
                duration = watchdog_timer_minimum
        else:
            duration = watchdog_timer_default

        return duration

    reset_abort_timer(check_test_durations(item.nodeid))
    with open(".pytest_current_test_executing", "w") as f:
        f.write(item.nodeid)
        f.flush()


def pytest_sessionstart(session):
    num_threads = 8
    if "FORGE_NUM_THREADS" in os.environ:
        num_threads = int(os.environ["FORGE_NUM_THREADS"])
    os.environ["TVM_NUM_THREADS"] = f"{num_threads}"
    print_env_variables = bool(int(os.environ.get("PYTEST_PRINT_ENV_VARIABLES", "0")))
    if print_env_variables:
        forge_specific_vars = {}
        tt_backend_specific_vars = {}
        print(f"####### Environment variables - Count: {len(os.environ)} #######")
        for key, value in os.environ.items():
            print(f"{key}={value}")
            if key.startswith("FORGE_") or key.startswith("GOLDEN_"):
                forge_specific_vars[key] = value
            elif key.startswith("TT_BACKEND_"):
                tt_backend_specific_vars[key] = value
        print(f"####### FORGE specific enviroment variables - Count: {len(forge_specific_vars)} #######")
        for key, value in forge_specific_vars.items():
            print(f"{key}={value}")
        print(f"####### TT_BACKEND specific enviroment variables - Count: {len(tt_backend_specific_vars)} #######")
        for key, value in tt_backend_specific_vars.items():
            print(f"{key}={value}")


@pytest.fixture(autouse=True)
def reset_seeds_fixture():
    test.utils.reset_seeds()


@pytest.fixture(autouse=True)
def reset_device():
    if "FORGE_RESET_DEV_BEFORE_TEST" in os.environ:
        subprocess.check_call(["device/bin/silicon/reset.sh"], cwd=os.environ["FORGE_HOME"])


def pytest_addoption(parser):
    parser.addoption(
        "--silicon-only", action="store_true", default=False, help="run silicon tests only, skip golden/model"
    )
    parser.addoption("--no-silicon", action="store_true", default=False, help="skip silicon tests")
    parser.addoption(
        "--compile-only", action="store_true", default=False, help="only compiles the model and generate TTI"
    )
    parser.addoption(
        "--run-only", action="store_true", default=False, help="load the generated TTI and only runs the model"
    )
    parser.addoption(
        "--tti-path",
        default=None,
        type=str,
        help="Valid only if either --compile-only or --run-only is specified. Save/load TTI from the path",
    )
    parser.addoption(
        "--device-config", default=None, type=str, help="Runtime yaml is automatically configured based on the value"
    )
    parser.addoption(
        "--devtype",
        default=None,
        type=str,
        choices=("golden", "silicon"),
        help="Valid only if --compile-only is specified. Set the backend device type between Golden or Silicon",
    )
    parser.addoption(
        "--no-skips", action="store_true", default=False, help="ignore pytest.skip() calls, and continue on with test"
    )


def pytest_generate_tests(metafunc):
    if "test_kind" in metafunc.fixturenames:
        metafunc.parametrize("test_kind", (TestKind.INFERENCE, TestKind.TRAINING), ids=["inference", "training"])
    if "training" in metafunc.fixturenames:
        metafunc.parametrize("training", (False, True), ids=["inference", "training"])
    if "test_device" in metafunc.fixturenames:
        metafunc.parametrize("test_device", (None,), ids=["no_device"])


environ_before_test = None


def pytest_runtest_logreport(report):
    global environ_before_test
    if report.when == "setup":
        environ_before_test = os.environ.copy()
    elif report.when == "teardown" and environ_before_test is not None:
        for f in set(environ_before_test) ^ set(os.environ):
            os.environ.pop(f, None)
        for key, default_value in environ_before_test.items():
            if os.environ.get(key, "") != default_value:
                os.environ[key] = default_value


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(config, items):
    patterns = config.getoption("--tests_to_filter")
    if patterns:
        selected, deselected, seen_files = [], [], set()
        file_patterns = [os.path.normpath(p) for p in patterns if "::" not in p]
        test_patterns = [p for p in patterns if "::" in p]
        for item in items:
            file_path = os.path.normpath(str(item.fspath))
            file_match = any(
                fnmatch.fnmatch(file_path, p) or fnmatch.fnmatch(file_path, p + ".py") or p in file_path
                for p in file_patterns
            )
            test_match = any(fnmatch.fnmatch(item.nodeid, p) or p in item.nodeid for p in test_patterns)
            if file_match or test_match:
                selected.append(item)
                seen_files.add(file_path)
            else:
                deselected.append(item)
        for pattern in file_patterns:
            if not any(pattern in f for f in seen_files):
                pytest.exit(f"No tests found matching file pattern: {pattern}", returncode=2)
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected

    yield

    # Upstream calls config.getoption("splits") (pytest-split); the default
    # here keeps it working without that plugin.
    splits = config.getoption("splits", None)
    group = config.getoption("group", None)
    if splits is not None and group is not None:
        nodeids = [item.nodeid for item in items]
        if nodeids:
            print("\nCollected tests after splits and group:")
            for n in nodeids:
                print(n)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_call(item):
    try:
        yield
    except ExitTest:
        pass
