# benchfleet fixture: the Framework enum of tt-xla tests/infra/utilities.py.
from enum import Enum


class Framework(Enum):
    JAX = "jax"
    TORCH = "torch"
