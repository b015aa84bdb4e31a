# benchfleet fixture: follows tenstorrent/tt-xla tests/infra/__init__.py
# (commit 052dcc48f05fa688f516f2b2ace34fe97cbf1d34), reduced to what
# tests/conftest.py imports. Importing it imports torch_xla (connectors.py).

"""Exposes only what is really needed to write tests, nothing else."""

from .connectors import DeviceConnectorFactory, TorchDeviceConnector
from .utilities import Framework
