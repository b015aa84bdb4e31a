# benchfleet fixture: small equivalent of tenstorrent/tt-forge-onnx
# forge/test/utils.py (reset_seeds only; stdlib random instead of numpy/torch).
import random


def reset_seeds():
    random.seed(0)
