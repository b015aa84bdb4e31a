# benchfleet fixture: small equivalent of tenstorrent/tt-forge-models base.py
# (commit 0208637969d1bc83c7590b4d7c5aeb9e39f6db27), without torch.
from abc import ABC, abstractmethod


class ForgeModel(ABC):
    _VARIANTS = {}
    DEFAULT_VARIANT = None

    def __init__(self, variant=None):
        self._variant = self._validate_variant(variant)
        self._variant_config = self.get_variant_config(variant)

    @classmethod
    def _validate_variant(cls, variant=None):
        if not cls._VARIANTS:
            return None
        if variant is None:
            variant = cls.DEFAULT_VARIANT
        if variant not in cls._VARIANTS:
            raise ValueError(f"Invalid variant '{variant}'. Available variants: {list(cls._VARIANTS.keys())}")
        return variant

    @classmethod
    def get_variant_config(cls, variant=None):
        variant = cls._validate_variant(variant)
        return None if variant is None else cls._VARIANTS[variant]

    @abstractmethod
    def load_model(self, **kwargs):
        pass

    @abstractmethod
    def load_inputs(self, **kwargs):
        pass
