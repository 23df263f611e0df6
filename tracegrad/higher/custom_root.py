"""``custom_root``: a root of a function, differentiated by the implicit function theorem
(``tg.custom_root``, ``tracegrad/implicit.py``).

A ``custom_root`` node's operands are the root ``x*`` (one operand per leaf, as the
user's ``solve`` found it; no derivative flows into them), ``consts``, the values ``f``
closes over, then the values ``solve`` and ``solve_t`` close over (no derivative of their
own either: the solution of the linear system does not depend on how it is found). Its
outputs are ``x*`` itself: the node is where the derivative of the root
with respect to ``consts`` enters the graph. Its graph params:

- ``f``: ``(*x, *consts) -> f(x)`` (one output per leaf of ``x``);
- ``solve``: ``(*x, *consts, *r, *captured) -> v`` with ``J v = r``, ``J = ∂f/∂x`` at
  ``x``: the user's ``tangent_solve(g, r)`` given ``g``, the linearization of ``f`` in ``x``;
- ``solve_t``: ``(*x, *consts, *c, *captured) -> w`` with ``Jᵀ w = c``: ``tangent_solve``
  given the transpose of that linearization.

Since ``f(x*(θ), θ) = 0``, ``J ẋ* = -∂f/∂θ θ̇``: the JVP is ``-solve(∂f/∂θ θ̇)`` and the
VJP gives ``consts`` the cotangent ``-(∂f/∂θ)ᵀ solve_t(ḡ)``. Both rules use the node's own
outputs for ``x*``, so they are differentiable again (through this node): second and
higher derivatives of the root come out of the same rules. The three graphs are traced
when the node is made, so a graph holding one is saved and loaded like any other.
"""
import numpy as np

from ..ir import schema
from ..ir.evaluate import call
from ..ir.registry import register
from .subgraph import adjoint_of, avals_of, tangent_graph, zero_tangents


def _zeros_like(aval):
    shape, dtype = aval
    return np.zeros(shape, dtype)


def _impl(*operands, f, solve, solve_t, n_x):
    return tuple(np.asarray(x) for x in operands[:n_x])


def _abstract(*avals, f, solve, solve_t, n_x):
    return avals_of(f, f.inputs[:n_x])


def _split(operands, f, solve, n_x):
    """(consts, solve's captured values, solve_t's)."""
    n_c = len(f.inputs) - n_x
    n_s = len(solve.inputs) - 2 * n_x - n_c
    consts = list(operands[n_x:n_x + n_c])
    return consts, list(operands[n_x + n_c:n_x + n_c + n_s]), list(operands[n_x + n_c + n_s:])


def _vjp(gs, outs, *operands, f, solve, solve_t, n_x):
    consts, _, cap_t = _split(operands, f, solve, n_x)
    if not consts:
        return (None,) * len(operands)
    x_avals = avals_of(f, f.inputs[:n_x])
    cts = [_zeros_like(a) if g is None else g for g, a in zip(gs, x_avals)]
    # Jᵀ w = ḡ, then the constants' cotangent -(∂f/∂θ)ᵀ w
    w = call(solve_t, [*outs, *consts, *cts, *cap_t])
    adj = adjoint_of(f, tuple(range(len(f.outputs))))
    res = call(adj, [*outs, *consts, *w])
    n_f = len(f.outputs)
    ct_consts = tuple(-ct for ct in res[n_f + n_x:])
    return (None,) * n_x + ct_consts + (None,) * (len(operands) - n_x - len(consts))


def _jvp(tangents, outs, *operands, f, solve, solve_t, n_x):
    consts, cap_s, _ = _split(operands, f, solve, n_x)
    x_avals = avals_of(f, f.inputs[:n_x])
    t_consts = tangents[n_x:n_x + len(consts)]
    if all(t is None for t in t_consts):
        return tuple(_zeros_like(a) for a in x_avals)
    # ∂f/∂θ θ̇ at the root, then J ẋ = -(that)
    jf = tangent_graph(f)
    res = call(jf, [*outs, *consts, *[_zeros_like(a) for a in x_avals],
                          *zero_tangents(consts, t_consts)])
    rhs = res[len(f.outputs):]
    v = call(solve, [*outs, *consts, *rhs, *cap_s])
    return tuple(-t for t in v)


def _jax(*operands, f, solve, solve_t, n_x):
    return tuple(operands[:n_x])




# -- what a loaded node may hold (``ir/schema.py``) -----------------------------------------------
def _check(avals, params):
    f, solve, solve_t, n_x = params["f"], params["solve"], params["solve_t"], params["n_x"]
    schema._need(1 <= n_x <= len(f.inputs) <= len(avals),
                 f"n_x={n_x} and an f of {len(f.inputs)} inputs for {len(avals)} operands")
    n_c = len(f.inputs) - n_x
    x, consts = list(avals[:n_x]), list(avals[n_x:n_x + n_c])
    schema._same(avals[:n_x + n_c], f, f.inputs, "custom_root f")
    schema._need(len(f.outputs) == n_x, "f must return one value per leaf of the root")
    schema._same(x, f, f.outputs, "custom_root f(x)")
    rest = list(avals[n_x + n_c:])
    for name, g in (("solve", solve), ("solve_t", solve_t)):
        n_cap = len(g.inputs) - 2 * n_x - n_c
        schema._need(0 <= n_cap <= len(rest) and len(g.outputs) == n_x,
                     f"{name} takes (*x, *consts, *rhs, *captured) and returns one value "
                     f"per leaf")
        schema._same(x + consts + x + rest[:n_cap], g, g.inputs, f"custom_root {name}")
        schema._same(x, g, g.outputs, f"custom_root {name} out")
        rest = rest[n_cap:]
    schema._need(not rest, "more operands than the graphs take")


register(
    "custom_root", _impl, abstract=_abstract, vjp=_vjp, jvp=_jvp, jax=_jax,
    family="control", complex=False, outputs=lambda **params: params["n_x"],
    doc="the root `x*` of `f` given as its first operands, differentiated by the implicit "
        "function theorem with respect to the rest (tg.custom_root)",
    # facts (registry): row by row under vmap, outputs may be the operands themselves
    batch=None,
    cost=lambda out_shape, arg_shapes, params: 0,
    schema=schema.Spec({"f": schema.GRAPH, "solve": schema.GRAPH, "solve_t": schema.GRAPH,
                        "n_x": schema.INT(1, 2**20)}, None, _check),
)
