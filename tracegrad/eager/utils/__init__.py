"""``tg.utils``: ``tg.utils.data`` (datasets, samplers and ``DataLoader``)."""
from . import data

__all__ = ["data"]
