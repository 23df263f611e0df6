"""``scipy.spatial`` with SciPy's signatures, on traced and plain values alike: the
distances of ``scipy.spatial.distance``."""
from . import distance  # noqa: F401

__all__ = ["distance"]
