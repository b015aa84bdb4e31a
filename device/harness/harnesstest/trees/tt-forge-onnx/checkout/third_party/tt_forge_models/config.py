# benchfleet fixture: small equivalent of tenstorrent/tt-forge-models config.py
# (commit 164c2d1e9f38f8042dc3dc6f7c224c27a57badb0).
from dataclasses import dataclass
from enum import Enum


class StrEnum(Enum):
    """str() is the value -- so pytest's parametrize id of a variant is its value."""

    def __str__(self) -> str:
        return self.value


class ModelGroup(StrEnum):
    GENERALITY = "generality"
    RED = "red"
    PRIORITY = "priority"


class ModelTask(StrEnum):
    CV_IMAGE_CLS = "cv_image_cls"


class ModelSource(StrEnum):
    HUGGING_FACE = "huggingface"
    TORCHVISION = "torchvision"
    TIMM = "timm"


class Framework(StrEnum):
    JAX = "jax"
    TORCH = "pytorch"
    NUMPY = "numpy"
    ONNX = "onnx"


@dataclass(frozen=True)
class ModelInfo:
    model: str
    variant: StrEnum
    group: ModelGroup
    task: ModelTask
    source: ModelSource
    framework: Framework

    @property
    def name(self) -> str:
        return f"{self.framework}_{self.model}_{self.variant}_{self.task}_{self.source}"


@dataclass
class ModelConfig:
    pretrained_model_name: str
