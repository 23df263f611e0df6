"""``tg.utils``: ``tg.utils.data`` (datasets, samplers and ``DataLoader``) and
``tg.utils.checkpoint`` (activation checkpointing)."""
from . import checkpoint, data

__all__ = ["data", "checkpoint"]
