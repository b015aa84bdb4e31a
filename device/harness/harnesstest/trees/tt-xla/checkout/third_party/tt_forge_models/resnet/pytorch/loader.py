# Follows tenstorrent/tt-forge-models resnet/pytorch/loader.py (variant
# RESNET_50_HF = "resnet_50_hf", model "resnet", HuggingFace source: the
# model returns an output object with .logits). The model is FAKE: a
# BatchNorm2d and a Linear head over sampled tensors, no weights.
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
class ResNetConfig(ModelConfig):
    source: ModelSource = ModelSource.HUGGING_FACE


class ModelVariant(StrEnum):
    RESNET_50_HF = "resnet_50_hf"


@dataclass
class ImageClassifierOutput:
    logits: torch.Tensor


class _FakeResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(64)
        self.classifier = nn.Linear(3 * 224 * 224, 1000)

    def forward(self, pixel_values):
        return ImageClassifierOutput(logits=self.classifier(self.bn1(pixel_values)))


class ModelLoader(ForgeModel):
    _VARIANTS = {
        ModelVariant.RESNET_50_HF: ResNetConfig(
            pretrained_model_name="microsoft/resnet-50",
            source=ModelSource.HUGGING_FACE,
        ),
    }
    DEFAULT_VARIANT = ModelVariant.RESNET_50_HF

    def __init__(self, variant: Optional[ModelVariant] = None):
        super().__init__(variant)
        self.model = None

    @classmethod
    def _get_model_info(cls, variant: Optional[ModelVariant] = None) -> ModelInfo:
        variant = variant or cls.DEFAULT_VARIANT
        return ModelInfo(
            model="resnet",
            variant=variant,
            group=ModelGroup.GENERALITY,
            task=ModelTask.CV_IMAGE_CLS,
            source=cls._VARIANTS[variant].source,
            framework=Framework.TORCH,
        )

    def load_model(self, dtype_override=None):
        model = _FakeResNet50().eval()
        self.model = model
        if dtype_override is not None:
            model = model.to(dtype_override)
        return model

    def load_inputs(self, dtype_override=None, batch_size=1):
        inputs = torch.randn(batch_size, 3, 224, 224)
        if dtype_override is not None:
            inputs = inputs.to(dtype_override)
        return inputs
