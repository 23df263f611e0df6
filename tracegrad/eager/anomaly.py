"""Anomaly mode: every backward node's results are checked for NaN and infinity."""
import threading

import numpy as np


class _State(threading.local):
    enabled = False


_state = _State()


def is_anomaly_enabled() -> bool:
    return _state.enabled


class set_detect_anomaly:
    """``set_detect_anomaly(True)`` turns the checks on (for a ``with`` block only, when
    used as one)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = is_anomaly_enabled()
        _state.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class detect_anomaly:
    """Within this block a backward node producing NaN or infinity raises a RuntimeError
    naming the node and the user's line that made its forward operation."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = is_anomaly_enabled()
        _state.enabled = True
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


def check(value, node, k):
    """Raise if ``value``, output ``k`` of backward node ``node``, holds NaN or inf."""
    value = np.asarray(value)
    if value.dtype.kind not in "fc":
        return
    bad = "nan" if np.isnan(value).any() else "inf" if np.isinf(value).any() else None
    if bad is None:
        return
    src = node.src
    raise RuntimeError(f"Function '{node.name()}' returned {bad} values in its {k}th output. "
                       f"It is the backward of the operation at {src or 'an unknown line'}.")
