# benchfleet fixture: small equivalent of tenstorrent/tt-forge-onnx conftest.py
# (repo root; commit 29d91df996d722d257526d8bce93dfe48541f6a3). Kept: the
# --log-memory-usage / --tests_to_filter options, forge_tmp_path,
# record_test_timestamp and forge_property_recorder (which makes
# record_model_properties return the model name). Dropped: the psutil memory
# tracker (psutil is not stdlib). Imports loguru and the forge wheel, so a host
# without them fails with "ImportError while loading conftest".
import shutil
from datetime import datetime

import pytest
from loguru import logger  # noqa: F401
from forge.forge_property_utils import (
    ForgePropertyHandler,
    forge_property_handler_var,
    get_device_arch,
    get_device_count,
    get_device_type,
)
from forge._C.verif import malloc_trim  # noqa: F401


def pytest_addoption(parser):
    parser.addoption(
        "--log-memory-usage",
        action="store_true",
        default=False,
        help="log per-test memory usage into pytest-memory-usage.csv",
    )
    parser.addoption(
        "--tests_to_filter", nargs="+", type=str, help="List of test patterns to include (file paths or full test IDs)"
    )


@pytest.fixture(scope="function")
def forge_tmp_path(tmp_path):
    yield tmp_path
    shutil.rmtree(str(tmp_path), ignore_errors=True)


@pytest.fixture(scope="function", autouse=True)
def record_test_timestamp(record_property):
    record_property("start_timestamp", datetime.strftime(datetime.now(), "%Y-%m-%dT%H:%M:%S%z"))
    yield
    record_property("end_timestamp", datetime.strftime(datetime.now(), "%Y-%m-%dT%H:%M:%S%z"))


@pytest.fixture(scope="function", autouse=True)
def forge_property_recorder(request, record_property):
    forge_property_handler = ForgePropertyHandler()
    token = forge_property_handler_var.set(forge_property_handler)

    arch = get_device_arch()
    device_count = get_device_count()
    device_type = get_device_type(arch, device_count)
    if device_type and device_type != "unknown":
        forge_property_handler.record_arch(device_type)
    elif arch:
        forge_property_handler.record_arch(arch)

    yield

    forge_property_handler.record_error(request)
    forge_property_handler.record_all_properties(record_property)
    forge_property_handler_var.reset(token)
