# Follows tenstorrent/tt-forge-models config.py (commit 164c2d1e): the
# enums and ModelInfo the loaders return; ModelInfo.name is
# f"{framework}_{model}_{variant}_{task}_{source}".
from dataclasses import dataclass
from enum import Enum


class StrEnum(Enum):
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
    TORCH_HUB = "torch_hub"
    TORCHVISION = "torchvision"
    TIMM = "timm"


class Framework(StrEnum):
    JAX = "jax"
    TORCH = "pytorch"


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

    def to_report_dict(self) -> dict:
        return {
            "task": str(self.task),
            "source": str(self.source),
            "framework": str(self.framework),
            "model_arch": self.model,
            "variant_name": str(self.variant),
        }


@dataclass
class ModelConfig:
    pretrained_model_name: str
