"""Neural-network helpers: ``rt.nn.functional`` (layers and optimisers come later, SPEC §8)."""
from . import functional

__all__ = ["functional"]
