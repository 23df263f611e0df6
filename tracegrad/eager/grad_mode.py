"""``no_grad``, ``enable_grad``, ``set_grad_enabled``: whether operations are recorded."""
import functools
import threading


class _State(threading.local):
    enabled = True          # each thread starts with grad mode on
    inference = False       # tg.inference_mode (eager/inference.py): tensors made are marked


_state = _State()


def is_grad_enabled() -> bool:
    """Whether operations are recorded now (in this thread)."""
    return _state.enabled


def _set(flag):
    _state.enabled = bool(flag)


class _Mode:
    """A context manager and decorator that sets grad mode and restores it on exit."""
    flag = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self.flag)
        return self

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_Mode):
    """Inside it, operations record nothing: results do not require grad."""
    flag = False


class enable_grad(_Mode):
    """Turn recording back on inside a ``no_grad`` block."""
    flag = True


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` turns recording off now (and, used with ``with``, for
    the block only)."""

    def __init__(self, mode: bool):
        self._prev = is_grad_enabled()
        self.flag = bool(mode)
        _set(mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        flag = self.flag
        _set(self._prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(flag):
                return fn(*args, **kwargs)
        return wrapper
