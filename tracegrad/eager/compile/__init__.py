"""``tg.compile`` (``torch.compile``): a call of eager code captured as one graph (forward,
``loss.backward()``'s adjoint, the optimizer's update), optimised and compiled; see
``docs/compile.md``."""
from .api import RECOMPILE_LIMIT, CompiledFunction, Explanation, InvalidBackend, compile, explain
from .capture import GraphBreak
from .module import OptimizedModule

__all__ = ["compile", "explain", "CompiledFunction", "OptimizedModule", "Explanation", "InvalidBackend",
           "GraphBreak", "RECOMPILE_LIMIT"]
