# Follows tenstorrent/tt-forge-models base.py: ForgeModel resolves the
# variant's config and exposes get_model_info.


class ForgeModel:
    _VARIANTS = {}
    DEFAULT_VARIANT = None

    def __init__(self, variant=None):
        self._variant = variant if variant is not None else self.DEFAULT_VARIANT
        self._variant_config = self._VARIANTS.get(self._variant)

    @classmethod
    def get_model_info(cls, variant=None):
        return cls._get_model_info(variant)
