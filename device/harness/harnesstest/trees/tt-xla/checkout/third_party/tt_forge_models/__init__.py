# benchfleet fixture: stand-in for the tenstorrent/tt-forge-models submodule
# that tt-xla checks out at third_party/tt_forge_models (CI: `git submodule
# update --init --recursive third_party/tt_forge_models`). Only the loaders
# the fixture's tests import exist; their models are FAKE (no weights, no
# HuggingFace/torchvision): small deterministic torch.nn modules.
