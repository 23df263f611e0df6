"""``no_grad``, ``enable_grad``, ``set_grad_enabled``: whether operations are recorded."""
import functools
import threading


class _State(threading.local):
    enabled = True          # each thread starts with grad mode on
    inference = False       # tg.inference_mode (eager/inference.py): tensors made are marked
    # inside a torch.func derivative (grad, vjp, jacrev, ...): the operations no_grad
    # covers are cut from the derivative (tracegrad/functorch/func.py counts them)
    functional = 0
    # inside a torch.func transform (any): the tensors requiring grad that its function
    # read as constants (their gradient would not reach them; torch's would)
    dropped = None


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


class functional_derivative:
    """While a ``torch.func`` transform traces its function: grad mode on (it ignores
    an outer ``no_grad``), and what an inner ``no_grad`` computes gets no derivative."""

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = True
        _state.functional += 1
        return self

    def __exit__(self, *exc):
        _state.functional -= 1
        _state.enabled = self._prev
        return False


def cuts_derivatives() -> bool:
    """Whether an operation here must carry no derivative: no_grad inside a
    ``torch.func`` transform's function."""
    return not _state.enabled and _state.functional > 0


class watch_dropped:
    """While a ``torch.func`` transform traces its function (the outermost one): the
    tensors that require grad and enter its operations as constants, collected in the
    list it gives (``dispatch`` adds them)."""

    def __enter__(self):
        self._outer = _state.dropped is not None
        if not self._outer:
            _state.dropped = []
        return _state.dropped if not self._outer else []

    def __exit__(self, *exc):
        if not self._outer:
            _state.dropped = None
        return False


def note_constants(tensors) -> None:
    """``dispatch``: these tensors entered a transform's operation (see watch_dropped)."""
    dropped = _state.dropped
    if dropped is not None and _state.enabled:
        for t in tensors:
            if t._requires_grad or t._tracer is not None:
                dropped.append(t)
