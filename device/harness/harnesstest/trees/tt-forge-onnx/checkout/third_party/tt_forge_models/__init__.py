# benchfleet fixture: stand-in for the tenstorrent/tt-forge-models submodule
# (third_party/tt_forge_models in tt-forge-onnx). Only what
# forge/test/benchmark/test_vision.py imports; no torch, no downloads.
