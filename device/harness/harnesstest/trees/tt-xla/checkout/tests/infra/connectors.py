# benchfleet fixture: stands for tt-xla tests/infra/connectors/ (device
# connectors). The torch connector selects the TT PJRT device through
# torch_xla, which must be installed: a host without the tt-xla wheel fails
# here with ModuleNotFoundError: No module named 'torch_xla'.
import torch_xla
import torch_xla.runtime as xr

from .utilities import Framework


class TorchDeviceConnector:
    def __init__(self):
        xr.set_device_type("TT")
        self.device = torch_xla.device()


class DeviceConnectorFactory:
    _connectors = {}

    @staticmethod
    def create_connector(framework):
        if framework not in DeviceConnectorFactory._connectors:
            if framework is not Framework.TORCH:
                raise ValueError(f"no {framework} connector in this fixture")
            DeviceConnectorFactory._connectors[framework] = TorchDeviceConnector()
        return DeviceConnectorFactory._connectors[framework]
