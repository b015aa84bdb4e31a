# benchfleet fixture: small equivalent of tenstorrent/tt-forge-models
# resnet/pytorch/loader.py. The variant values follow the tt-forge-models
# versions whose RESNET_50_HF is "resnet_50_hf" (e.g. the stored version with
# RESNET_50_TIMM = "resnet50_timm"); later versions use "50 HF" and
# "ResNet50 HuggingFace". The id follows the submodule tt-forge-onnx pins.
#
# FAKE COMPUTE (marked): load_model/load_inputs return stand-ins from
# forge._fake instead of a HuggingFace model and a COCO image tensor.
from dataclasses import dataclass
from typing import Optional

from ...config import ModelConfig, ModelInfo, ModelGroup, ModelTask, ModelSource, Framework, StrEnum
from ...base import ForgeModel


@dataclass
class ResNetConfig(ModelConfig):
    source: ModelSource
    high_res_size: tuple = None


class ModelVariant(StrEnum):
    """Available ResNet model variants."""

    RESNET_50_HF = "resnet_50_hf"
    RESNET_50_HF_HIGH_RES = "resnet_50_hf_high_res"
    RESNET_50_TIMM = "resnet50_timm"
    RESNET_18 = "resnet18"
    RESNET_50 = "resnet50"


class ModelLoader(ForgeModel):
    _VARIANTS = {
        ModelVariant.RESNET_50_HF: ResNetConfig(pretrained_model_name="microsoft/resnet-50", source=ModelSource.HUGGING_FACE),
        ModelVariant.RESNET_50_HF_HIGH_RES: ResNetConfig(
            pretrained_model_name="microsoft/resnet-50", source=ModelSource.HUGGING_FACE, high_res_size=(1280, 800)
        ),
        ModelVariant.RESNET_50_TIMM: ResNetConfig(pretrained_model_name="resnet50", source=ModelSource.TIMM),
        ModelVariant.RESNET_18: ResNetConfig(pretrained_model_name="resnet18", source=ModelSource.TORCHVISION),
        ModelVariant.RESNET_50: ResNetConfig(pretrained_model_name="resnet50", source=ModelSource.TORCHVISION),
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

    # --- FAKE COMPUTE ---
    def load_model(self, dtype_override=None):
        self.model = _FakeTorchModel(self._variant_config.pretrained_model_name)
        return self.model

    def load_inputs(self, dtype_override=None, batch_size=1, image=None):
        from forge._fake import FakeTensor

        h, w = (224, 224) if self._variant_config.high_res_size is None else self._variant_config.high_res_size[::-1]
        return FakeTensor((batch_size, 3, h, w))


class _FakeTorchModel:
    def __init__(self, name):
        self.name = name

    def eval(self):
        return self

    def __call__(self, x):
        from forge._fake import FakeTensor

        return FakeTensor((x.shape[0], 1000), serial=-1)
    # --- end FAKE COMPUTE ---
