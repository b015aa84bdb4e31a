# Follows tenstorrent/tt-forge-models mobilenetv2/pytorch/loader.py (variant
# MOBILENET_V2_TORCH_HUB, torch hub source: the model returns a tensor). The
# model is FAKE: a Linear head over sampled tensors, no weights.
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn

from ...base import ForgeModel
from ...config import (
    Framework,
    ModelConfig,
    ModelGroup,
    ModelInfo,
    ModelSource,
    ModelTask,
    StrEnum,
)


@dataclass
class MobileNetV2Config(ModelConfig):
    source: ModelSource = ModelSource.TORCH_HUB


class ModelVariant(StrEnum):
    MOBILENET_V2_TORCH_HUB = "mobilenet_v2_torch_hub"


class _FakeMobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(32)
        self.classifier = nn.Linear(3 * 224 * 224, 1000)

    def forward(self, x):
        return self.classifier(self.bn(x))


class ModelLoader(ForgeModel):
    _VARIANTS = {
        ModelVariant.MOBILENET_V2_TORCH_HUB: MobileNetV2Config(
            pretrained_model_name="mobilenet_v2",
            source=ModelSource.TORCH_HUB,
        ),
    }
    DEFAULT_VARIANT = ModelVariant.MOBILENET_V2_TORCH_HUB

    def __init__(self, variant: Optional[ModelVariant] = None):
        super().__init__(variant)
        self.model = None

    @classmethod
    def _get_model_info(cls, variant: Optional[ModelVariant] = None) -> ModelInfo:
        variant = variant or cls.DEFAULT_VARIANT
        return ModelInfo(
            model="mobilenetv2",
            variant=variant,
            group=ModelGroup.GENERALITY,
            task=ModelTask.CV_IMAGE_CLS,
            source=cls._VARIANTS[variant].source,
            framework=Framework.TORCH,
        )

    def load_model(self, dtype_override=None):
        model = _FakeMobileNetV2().eval()
        self.model = model
        if dtype_override is not None:
            model = model.to(dtype_override)
        return model

    def load_inputs(self, dtype_override=None, batch_size=1):
        inputs = torch.randn(batch_size, 3, 224, 224)
        if dtype_override is not None:
            inputs = inputs.to(dtype_override)
        return inputs
