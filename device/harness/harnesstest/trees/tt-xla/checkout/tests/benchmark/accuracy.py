# benchfleet fixture: the PCC helper the benchmarks share. Its module is
# tenstorrent/tt-xla tests/benchmark/accuracy.py (commit
# 673107466f119db5ff7f52e2ab519ee06d0ed062); what it prints follows the
# version in tests/benchmark/utils.py that shared/UPSTREAM.md §2 names
# (compute_pcc: "PCC check: Calculated PCC=..., Required PCC=..." after the
# check, "PCC comparison failed. Calculated: pcc=... Required: pcc=..." on
# failure), followed by the newer "PCC verification passed with PCC=..."
# line both versions end with. On pass it prints
#   PCC check: Calculated PCC=0.950000, Required PCC=0.9
#   PCC verification passed with PCC=0.950000
# and on fail raises
#   AssertionError: PCC comparison failed. Calculated: pcc=0.500000. Required: pcc=0.9
# (Required is the float as Python prints it: 0.90 -> "0.9", 0.97 -> "0.97").
# compute_rel_l2 is left out.

import torch


def compute_pcc(golden_output: torch.Tensor, device_output: torch.Tensor) -> float:
    """Pearson correlation of two tensors, clamped to [-1, 1]."""
    g = golden_output.to(torch.float32).flatten()
    d = device_output.to(torch.float32).flatten()
    gc = g - g.mean()
    dc = d - d.mean()
    denom = gc.norm() * dc.norm()
    if denom == 0:
        if torch.allclose(g, d, rtol=1e-2, atol=1e-2):
            return 1.0
        raise ValueError("PCC computation failed: denominator is zero but tensors are not close")
    return max(-1.0, min(1.0, ((gc @ dc) / denom).item()))


def assert_pcc(device_output, golden_output, required_pcc: float) -> float:
    """Compute PCC against the CPU golden and assert it meets required_pcc."""
    pcc_value = compute_pcc(device_output, golden_output)
    print(f"PCC check: Calculated PCC={pcc_value:.6f}, Required PCC={required_pcc}")
    assert pcc_value >= required_pcc, (
        f"PCC comparison failed. Calculated: pcc={pcc_value:.6f}. Required: pcc={required_pcc}"
    )
    print(f"PCC verification passed with PCC={pcc_value:.6f}")
    return pcc_value
