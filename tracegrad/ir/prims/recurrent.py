"""``lstm_cell`` and its gradient ``lstm_cell_grad``: one LSTM step, each one node.

An LSTM step composed of ``sigmoid``, slices, ``tanh``, ``mul`` and ``add`` is about a
dozen nodes forward and thirty backward, and a recurrent layer runs it once per time step:
in eager mode and in generated code alike the cost is the per-node overhead, not the
arithmetic (a 10 x 32 state). PyTorch fuses the step the same way
(``_thnn_fused_lstm_cell``).

``lstm_cell(gates, c) -> (h, c', act)``: ``gates`` (..., 4H) are the summed input and
hidden contributions in PyTorch's order (i, f, g, o), ``c`` (..., H) the cell state, both of
one floating dtype and the same leading shape. ``act`` is the activated block
``[sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)]``, ``c' = sigmoid(f) * c + sigmoid(i) *
tanh(g)``, ``h = sigmoid(o) * tanh(c')``. The values are those of the composite to the
bit: one sigmoid ``1 / (1 + exp(-x))`` over the whole block (whose g quarter is replaced),
``tanh`` of the g quarter of ``gates``, then the products and the sum in that order.
``act`` is returned so that the gradient reads the activations instead of recomputing
them; a program that uses it also gets its derivative.

``lstm_cell_grad(gh, gc, act, c, c') -> (d_gates, d_c)``: the VJP of ``h`` and ``c'`` by
cotangents ``gh`` and ``gc``. Its own VJP and JVP are NumPy code on traced values, so
second (and higher) derivatives go through it like any other rule.
"""
import math

import numpy as np

from ..registry import apply, register
from . import batching


def _quarters(a):
    n = a.shape[-1] // 4
    return a[..., :n], a[..., n:2 * n], a[..., 2 * n:3 * n], a[..., 3 * n:]


def _check(gates, c):
    gs, cs = tuple(gates.shape), tuple(c.shape)
    gd, cd = np.dtype(gates.dtype), np.dtype(c.dtype)
    if not gs or not cs or gs[-1] != 4 * cs[-1] or gs[:-1] != cs[:-1]:
        raise ValueError(f"lstm_cell: gates of shape {gs} and a cell state of shape {cs} "
                         f"(expected (..., 4H) and (..., H))")
    if gd != cd or gd.kind != "f":
        raise TypeError(f"lstm_cell: gates and cell state of one floating dtype, got {gd} "
                        f"and {cd}")


# -- lstm_cell ---------------------------------------------------------------------------------
def _lstm_cell_impl(gates, c):
    n = c.shape[-1]
    if gates.shape[-1] != 4 * n:
        _check(gates, c)
    act = np.negative(gates)
    with np.errstate(over="ignore"):       # exp(-x) overflows to inf below x = -88: sigmoid 0
        np.exp(act, out=act)
    np.add(1.0, act, out=act)              # (a Python 1.0 takes the array's dtype)
    np.divide(1.0, act, out=act)
    g = act[..., 2 * n:3 * n]
    np.tanh(gates[..., 2 * n:3 * n], out=g)
    c_new = act[..., n:2 * n] * c
    c_new += act[..., :n] * g
    h = np.tanh(c_new)
    np.multiply(act[..., 3 * n:], h, out=h)
    return h, c_new, act


def _lstm_cell_abstract(gates, c):
    _check(gates, c)
    return [(tuple(c.shape), c.dtype), (tuple(c.shape), c.dtype),
            (tuple(gates.shape), gates.dtype)]


def _act_slope(act):
    """The derivative of the activations by the gates: s (1 - s) on the sigmoid quarters,
    1 - t^2 on the tanh one."""
    i, f, g, o = _quarters(act)
    return np.concatenate([i * (1.0 - i), f * (1.0 - f), 1.0 - g * g, o * (1.0 - o)], axis=-1)


def _lstm_cell_vjp(gs, outs, gates, c):
    gh, gc, gact = gs
    h, c_new, act = outs
    d_gates = d_c = None
    if gh is not None or gc is not None:
        gh = np.zeros_like(h) if gh is None else gh
        gc = np.zeros_like(c_new) if gc is None else gc
        d_gates, d_c = apply("lstm_cell_grad", gh, gc, act, c, c_new)
    if gact is not None:
        part = gact * _act_slope(act)
        d_gates = part if d_gates is None else d_gates + part
    return d_gates, d_c


def _lstm_cell_jvp(tangents, outs, gates, c):
    t_gates, t_c = tangents
    h, c_new, act = outs
    si, sf, tg, so = _quarters(act)
    t_cn = None if t_c is None else sf * t_c
    t_act = None
    if t_gates is not None:
        t_act = t_gates * _act_slope(act)
        ti, tf, tt, to = _quarters(t_act)
        part = tf * c + ti * tg + si * tt
        t_cn = part if t_cn is None else t_cn + part
    if t_cn is None:
        return None, None, None
    tc = np.tanh(c_new)
    t_h = so * ((1.0 - tc * tc) * t_cn)
    if t_act is not None:
        t_h = t_h + _quarters(t_act)[3] * tc
    return t_h, t_cn, t_act


def _lstm_cell_jax(gates, c):
    import jax
    import jax.numpy as jnp

    n = gates.shape[-1] // 4
    act = jax.nn.sigmoid(gates)
    act = act.at[..., 2 * n:3 * n].set(jnp.tanh(gates[..., 2 * n:3 * n]))
    i, f, g, o = _quarters(act)
    c_new = f * c + i * g
    return o * jnp.tanh(c_new), c_new, act


def _batch_all(name):
    """Every operand with the batch axis in front (an unbatched one broadcast to it): the
    primitive acts on any leading shape."""
    def rule(size, args, batched, out_shape, **params):
        ops = [a if b else batching.bcast(a, size) for a, b in zip(args, batched)]
        return apply(name, *ops, **params)
    return rule


def _cost(per_element):
    def cost(out_shape, arg_shapes, params):
        return per_element * math.prod(arg_shapes[0])
    return cost


register(
    "lstm_cell", _lstm_cell_impl, abstract=_lstm_cell_abstract, outputs=3,
    vjp=_lstm_cell_vjp, jvp=_lstm_cell_jvp, jax=_lstm_cell_jax, family="nn",
    batch=_batch_all("lstm_cell"), complex=False, aliasing="fresh", cost=_cost(6),
    torch_name="ThnnFusedLstmCellBackward0",
    doc="one LSTM step from summed gates (i, f, g, o) and cell state: (h, c', activations)",
)


# -- lstm_cell_grad ----------------------------------------------------------------------------
def _grad_check(gh, gc, act, c, c_new):
    _check(act, c)
    for name, a in (("gh", gh), ("gc", gc), ("c'", c_new)):
        if tuple(a.shape) != tuple(c.shape) or np.dtype(a.dtype) != np.dtype(c.dtype):
            raise ValueError(f"lstm_cell_grad: {name} of shape {tuple(a.shape)} and dtype "
                             f"{np.dtype(a.dtype)}, expected {tuple(c.shape)} {np.dtype(c.dtype)}")


def _lstm_cell_grad_impl(gh, gc, act, c, c_new):
    n = c.shape[-1]
    if act.shape[-1] != 4 * n:
        _grad_check(gh, gc, act, c, c_new)
    si, sf, tg, so = _quarters(act)
    tc = np.tanh(c_new)
    # d c' = gc + gh * o * (1 - tanh(c')^2)
    d_cn = tc * tc
    np.subtract(1.0, d_cn, out=d_cn)
    d_cn *= gh
    d_cn *= so
    d_cn += gc
    # d gates = the activations' slopes (s (1 - s); 1 - t^2 on g) times, per quarter,
    # d c' g, d c' c, d c' i and gh tanh(c'): two products over the whole block, the rest
    # on quarters (strided, the slower kind)
    slope = np.subtract(1.0, act)
    slope *= act
    slope_g = slope[..., 2 * n:3 * n]
    np.multiply(tg, tg, out=slope_g)
    np.subtract(1.0, slope_g, out=slope_g)
    other = np.empty_like(slope)
    oi, of, og, oo = _quarters(other)
    np.multiply(tg, d_cn, out=oi)
    np.multiply(c, d_cn, out=of)
    np.multiply(si, d_cn, out=og)
    np.multiply(tc, gh, out=oo)
    slope *= other
    return slope, d_cn * sf


def _lstm_cell_grad_abstract(gh, gc, act, c, c_new):
    _grad_check(gh, gc, act, c, c_new)
    return [(tuple(act.shape), act.dtype), (tuple(c.shape), c.dtype)]


def _lstm_cell_grad_vjp(gs, outs, gh, gc, act, c, c_new):
    u, v = gs
    u = np.zeros_like(act) if u is None else u
    v = np.zeros_like(c) if v is None else v
    ui, uf, ug, uo = _quarters(u)
    si, sf, tg, so = _quarters(act)
    tc = np.tanh(c_new)
    k = 1.0 - tc * tc
    d_cn = gc + gh * so * k
    do = gh * tc
    # the four quarters of d_gates, each a product whose factors get the cotangent
    di_bar = ui * (si * (1.0 - si))
    df_bar = uf * (sf * (1.0 - sf))
    dg_bar = ug * (1.0 - tg * tg)
    do_bar = uo * (so * (1.0 - so))
    si_bar = ui * (d_cn * tg) * (1.0 - 2.0 * si) + dg_bar * d_cn
    sf_bar = uf * (d_cn * c) * (1.0 - 2.0 * sf) + v * d_cn
    tg_bar = -2.0 * tg * ug * (d_cn * si) + di_bar * d_cn
    so_bar = uo * do * (1.0 - 2.0 * so)
    # d c' feeds every quarter but o's and the cell state's cotangent
    dcn_bar = v * sf + dg_bar * si + df_bar * c + di_bar * tg
    c_bar = df_bar * d_cn
    gc_bar = dcn_bar
    gh_bar = dcn_bar * so * k + do_bar * tc
    so_bar = so_bar + dcn_bar * gh * k
    tc_bar = -2.0 * tc * (dcn_bar * gh * so) + do_bar * gh
    cn_bar = tc_bar * k
    act_bar = np.concatenate([si_bar, sf_bar, tg_bar, so_bar], axis=-1)
    return gh_bar, gc_bar, act_bar, c_bar, cn_bar


def _lstm_cell_grad_jvp(tangents, outs, gh, gc, act, c, c_new):
    t_gh, t_gc, t_act, t_c, t_cn = (np.zeros_like(a) if t is None else t
                                    for t, a in zip(tangents, (gh, gc, act, c, c_new)))
    si, sf, tg, so = _quarters(act)
    tsi, tsf, ttg, tso = _quarters(t_act)
    tc = np.tanh(c_new)
    k = 1.0 - tc * tc
    t_tc = k * t_cn
    t_k = -2.0 * tc * t_tc
    d_cn = gc + gh * so * k
    t_dcn = t_gc + t_gh * so * k + gh * tso * k + gh * so * t_k
    do = gh * tc
    t_do = t_gh * tc + gh * t_tc
    ei, ef, eo = si * (1.0 - si), sf * (1.0 - sf), so * (1.0 - so)
    eg = 1.0 - tg * tg
    t_di = (t_dcn * tg + d_cn * ttg) * ei + d_cn * tg * ((1.0 - 2.0 * si) * tsi)
    t_df = (t_dcn * c + d_cn * t_c) * ef + d_cn * c * ((1.0 - 2.0 * sf) * tsf)
    t_dg = (t_dcn * si + d_cn * tsi) * eg + d_cn * si * (-2.0 * tg * ttg)
    t_do_gate = t_do * eo + do * ((1.0 - 2.0 * so) * tso)
    t_d_gates = np.concatenate([t_di, t_df, t_dg, t_do_gate], axis=-1)
    return t_d_gates, t_dcn * sf + d_cn * tsf


def _lstm_cell_grad_jax(gh, gc, act, c, c_new):
    import jax.numpy as jnp

    si, sf, tg, so = _quarters(act)
    tc = jnp.tanh(c_new)
    d_cn = gc + gh * so * (1 - tc * tc)
    d_gates = jnp.concatenate([d_cn * tg * (si * (1 - si)), d_cn * c * (sf * (1 - sf)),
                               d_cn * si * (1 - tg * tg), gh * tc * (so * (1 - so))], axis=-1)
    return d_gates, d_cn * sf


register(
    "lstm_cell_grad", _lstm_cell_grad_impl, abstract=_lstm_cell_grad_abstract, outputs=2,
    vjp=_lstm_cell_grad_vjp, jvp=_lstm_cell_grad_jvp, jax=_lstm_cell_grad_jax, family="nn",
    batch=_batch_all("lstm_cell_grad"), complex=False, aliasing="fresh", cost=_cost(5),
    torch_name="ThnnFusedLstmCellBackwardBackward0",
    doc="the VJP of lstm_cell's h and c' by (gh, gc): (d gates, d c)",
)
