"""The autodiff engine both front ends reach the same way: the structural key of a
recorded computation (``keys``), the one plan cache (``PLANS``, an ``ir.lru.LRU``), the
interpret-then-compile policy (``runner``) and the adjoint pass (``passes.adjoint``)
that turns a recorded graph into its backward plan.

    functional:  tg.grad -> tracer (records) -> autodiff -> runtime
    eager:       tape -> eager engine (PyTorch's semantics) -> autodiff -> runtime
"""
from ..ir.lru import LRU
from ..passes.adjoint import adjoint, backward_graph
from .keys import Uncacheable, freeze, freeze_params
from .plans import PLANS
from .runner import Runner, compile_after

__all__ = ["LRU", "PLANS", "Runner", "Uncacheable", "adjoint", "backward_graph",
           "compile_after", "freeze", "freeze_params"]
