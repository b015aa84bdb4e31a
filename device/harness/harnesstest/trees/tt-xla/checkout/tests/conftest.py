# benchfleet fixture: follows tenstorrent/tt-xla tests/conftest.py (commit
# 04274aa658e35fbb25d8e289cb8625af61a313f4), reduced. What matters for a
# runner: it imports torch and the test infrastructure (`from infra import
# ...`, which imports torch_xla) and third_party.tt_forge_models at module
# level, so on a host without them pytest reports
#   ImportError while loading conftest '<checkout>/tests/conftest.py'.
# and exits 4. CI passes --confcutdir=tests/benchmark so this file is not
# loaded for benchmarks. (Upstream also imports psutil and loguru, and its
# infra imports jax; the fixture leaves those out.)

import pytest
import torch
from infra import DeviceConnectorFactory, Framework
from third_party.tt_forge_models.config import ModelInfo  # noqa: F401


def pytest_configure(config: pytest.Config):
    config.addinivalue_line(
        "markers",
        "record_test_properties(key_value_pairs): Record custom properties for the test",
    )


def pytest_addoption(parser):
    parser.addoption(
        "--log-memory",
        action="store_true",
        default=False,
        help="Enable memory usage tracking for tests",
    )


@pytest.fixture(scope="session", autouse=True)
def initialize_device_connectors():
    """Connect to the devices before any test runs (upstream: JAX and TORCH)."""
    DeviceConnectorFactory.create_connector(Framework.TORCH)


@pytest.fixture(autouse=True)
def run_around_tests():
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
