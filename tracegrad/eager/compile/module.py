"""``tg.compile(module)``: PyTorch's ``OptimizedModule``, a module wrapping the original
(``_orig_mod``, whose parameters it shares) whose call is compiled."""
from __future__ import annotations

from typing import Any

from ..nn.modules import Module


class OptimizedModule(Module):
    """The module ``tg.compile(module)`` returns: calling it runs the compiled
    ``module(...)``; ``parameters()``, ``state_dict()`` (keys prefixed ``_orig_mod.``, as
    PyTorch's), ``train()``/``eval()`` reach the original; other attributes are the
    original's."""

    def __init__(self, mod: Module, compiled: Any) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_compiled"](*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_compiled"](*args, **kwargs)

    def explain(self):
        """The graphs captured, the graph breaks and why (see ``CompiledFunction``)."""
        return self.__dict__["_compiled"].explain()

    @property
    def graphs(self):
        return self.__dict__["_compiled"].graphs

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __repr__(self) -> str:
        return f"OptimizedModule(\n  (_orig_mod): {self._modules['_orig_mod']!r}\n)"
