# benchfleet fixture: follows tenstorrent/tt-xla tests/benchmark/naming.py
# (commit 673107466f119db5ff7f52e2ab519ee06d0ed062).
import re
import secrets
from typing import Any, Optional, Union


def sanitize_model_name(value: Any) -> str:
    text = re.sub(r"\s+", "_", str(value).strip())
    text = re.sub(r"[^a-zA-Z0-9_]+", "_", text)
    text = re.sub(r"_+", "_", text).strip("_").lower()
    return text or "na"


def build_xla_export_name(
    model_name: str,
    num_layers: Optional[Union[int, str]],
    batch_size: int,
    input_sequence_length: Optional[int],
) -> str:
    """<model>[_<n>lyr]_bs<batch>[_isl<len>]_run<4 hex>: a new name every run."""
    parts = [sanitize_model_name(getattr(model_name, "name", model_name))]
    if isinstance(num_layers, int) and num_layers > 0:
        parts.append(f"{num_layers}lyr")
    parts.append(f"bs{batch_size}")
    if input_sequence_length is not None and input_sequence_length > 0:
        parts.append(f"isl{input_sequence_length}")
    parts.append(f"run{secrets.token_hex(2)}")
    return "_".join(parts)


def resolve_display_name(request: Any = None, fallback: Optional[str] = None) -> str:
    """The pytest test name without "test_" (test_resnet50 -> resnet50)."""
    name = None
    node = getattr(request, "node", None)
    test_name = getattr(node, "name", None)
    if test_name and test_name.startswith("test_"):
        name = test_name[5:]
    return name or sanitize_model_name(fallback or "")
