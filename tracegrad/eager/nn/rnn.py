"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (several layers, ``batch_first``,
bidirectional, inter-layer dropout) and their single-step cells.

A layer is composed of the eager operations, step by step: the input's contribution
to every step's gates is one ``linear`` over the whole sequence, then each step adds
the hidden state's. Parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z,
n) and initialisation (U(-1/sqrt(hidden), 1/sqrt(hidden))) are PyTorch's, so a
state_dict moves between the two.
"""
from __future__ import annotations

import math

from ...ir import apply
from ..creation import empty, zeros
from ..dispatch import call as _call
from ..functions import cat, stack
from . import functional as F
from . import init
from .modules import Module, Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_cell(x_part, h, w_hh, b_hh, relu):
    g = x_part + F.linear(h, w_hh, b_hh)
    return g.relu() if relu else g.tanh()


def _fused_step(gates, c):
    h, c, _ = apply("lstm_cell", gates, c)   # the activations are the backward's
    return h, c


def _lstm_step(gates, c):
    """One LSTM step from its summed gates (i, f, g, o along the last axis): one sigmoid
    over the whole block (PyTorch's, ``Tensor.sigmoid``) of which the i, f and o quarters
    are kept, and tanh of the g quarter; ``c`` None is a zero cell state. With a state, one
    ``lstm_cell`` node (the same values to the bit, and one node for the backward); its
    ``h`` and ``c'`` are sibling outputs, as those of PyTorch's fused LSTM layer are."""
    if _fusable(gates, c):
        return _call(_fused_step, gates, c)
    hidden = gates.shape[-1] // 4
    i, f, _, o = gates.sigmoid().chunk(4, -1)
    g = gates[..., 2 * hidden:3 * hidden].tanh()
    c = i * g if c is None else f * c + i * g
    return o * c.tanh(), c


def _cell_state(gates, c):
    return apply("lstm_cell", gates, c)[1]      # c' (the node keeps h and the activations)


def _lstm_cell(x_part, hc, w_hh, b_hh):
    """``LSTMCell``'s step. PyTorch composes it on the CPU, so its ``h = o * tanh(c)``
    reads the returned ``c``: a hook on ``c``, its ``retain_grad`` and ``autograd.grad``
    by it see the gradient through ``h`` too. The fused node gives ``c'`` and the
    activations; ``h`` is computed from that ``c'`` (the same values, to the bit)."""
    h, c = hc
    gates = x_part + F.linear(h, w_hh, b_hh)
    if not _fusable(gates, c):
        return _lstm_step(gates, c)
    c = _call(_cell_state, gates, c)
    # (o taken again from the gates, not from the activations: its gradient then goes
    # straight to the gates, and the fused backward gets no cotangent for them)
    return gates[..., 3 * c.shape[-1]:].sigmoid() * c.tanh(), c


def _fusable(gates, c):
    return c is not None and c.dtype == gates.dtype and gates.dtype.kind == "f" \
        and gates.shape[:-1] == c.shape[:-1] and gates.shape[-1] == 4 * c.shape[-1]


def _gru_cell(x_part, h, w_hh, b_hh):
    xr, xz, xn = x_part.chunk(3, -1)
    hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * h


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if proj_size:
            raise NotImplementedError("LSTM: proj_size is not supported")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 \
                or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        if dropout > 0 and num_layers == 1:
            import warnings
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=3)
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                names = [f"weight_ih{sfx}", f"weight_hh{sfx}"]
                setattr(self, names[0], Parameter(empty(gate, layer_in, dtype=dtype)))
                setattr(self, names[1], Parameter(empty(gate, hidden_size, dtype=dtype)))
                if bias:
                    names += [f"bias_ih{sfx}", f"bias_hh{sfx}"]
                    setattr(self, names[2], Parameter(empty(gate, dtype=dtype)))
                    setattr(self, names[3], Parameter(empty(gate, dtype=dtype)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def flatten_parameters(self):
        pass    # no cuDNN here: nothing to compact

    @property
    def all_weights(self):
        dirs = 2 if self.bidirectional else 1
        per = 4 if self.bias else 2
        flat = [getattr(self, n) for n in self._flat_weights_names]
        return [flat[i * per:(i + 1) * per] for i in range(self.num_layers * dirs)]

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx) if self.bias or "weight" in n else None
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _check_input(self, input, hx):
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D tensor instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _run(self, input, hx, step):
        """The layers over ``input`` (L, N, H_in) from the initial states ``hx`` (a list,
        one per layer and direction, each a state as ``step`` takes and returns; the
        output is a state's first tensor, or the state itself)."""
        dirs = 2 if self.bidirectional else 1
        finals = []
        layer_input = input
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                x_part = F.linear(layer_input, w_ih, b_ih)
                state = hx[layer * dirs + d]
                steps = range(x_part.shape[0])
                seq = [None] * x_part.shape[0]
                for t in (reversed(steps) if d else steps):
                    state = step(x_part[t], state, w_hh, b_hh)
                    seq[t] = state[0] if isinstance(state, tuple) else state
                outs.append(stack(seq, 0))
                finals.append(state)
            layer_input = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, finals

    def _prepare(self, input, hx, n_states):
        self._check_input(input, hx)
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        n = input.shape[1]
        dirs = 2 if self.bidirectional else 1
        expected = (self.num_layers * dirs, n, self.hidden_size)
        if hx is None:
            z = zeros(*expected, dtype=input.dtype)
            hx = (z,) * n_states
        else:
            hx = hx if isinstance(hx, tuple) else (hx,)
            if len(hx) != n_states:
                raise RuntimeError(f"{type(self).__name__}: expected {n_states} hidden states")
            fixed = []
            for h in hx:
                if not batched:
                    if h.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but "
                                           f"got {h.dim()}-D tensor")
                    h = h.unsqueeze(1)
                elif h.dim() != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                       f"{h.dim()}-D tensor")
                if tuple(h.shape) != expected:
                    raise RuntimeError(f"Expected hidden size {expected}, got {list(h.shape)}")
                fixed.append(h)
            hx = tuple(fixed)
        return input, hx, batched

    def _finish(self, out, finals, batched, n_states):
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if n_states == 1:
            h = stack(finals, 0)
            return out, (h if batched else h.squeeze(1))
        hs = tuple(stack([f[i] for f in finals], 0) for i in range(n_states))
        return out, hs if batched else tuple(h.squeeze(1) for h in hs)


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if len(args) > 3:       # PyTorch's positional order puts nonlinearity fourth
            args = list(args)
            nonlinearity = args.pop(3)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare(input, hx, 1)
        relu = self.nonlinearity == "relu"
        step = lambda x, h, w, b: _rnn_cell(x, h, w, b, relu)
        out, finals = self._run(input, list(hx[0].unbind(0)), step)
        return self._finish(out, finals, batched, 1)


class LSTM(RNNBase):
    """Long short-term memory; ``forward(input, (h0, c0))`` returns
    ``output, (h_n, c_n)``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        zero = hx is None
        input, hx, batched = self._prepare(input, hx, 2)
        out, finals = self._run_lstm(input, hx, zero)
        return self._finish(out, finals, batched, 2)

    def _run_lstm(self, input, hx, zero):
        """``_run`` for the LSTM, in fewer operations: both biases added to the input's
        part once for the whole sequence, the hidden weight transposed once, the two
        directions of a bidirectional layer stepped together (the reverse one on the
        time-reversed sequence, with the weights and states of both directions stacked,
        one batched product a step), and with ``zero`` initial states the first step
        without them."""
        dirs = 2 if self.bidirectional else 1
        finals = []
        layer_input = input
        for layer in range(self.num_layers):
            parts, w_t = [], []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                x_part = F.linear(layer_input, w_ih, b_ih)
                if b_hh is not None:
                    x_part = x_part + b_hh
                parts.append(x_part if d == 0 else x_part.flip(0))
                # (C-ordered: OpenBLAS multiplies a small state by a transposed view
                # at half the speed)
                w_t.append(w_hh.t().contiguous())
            h, c = (s[layer * dirs:(layer + 1) * dirs] for s in hx)
            if dirs == 1:
                parts, w, h, c = parts[0], w_t[0], h[0], c[0]
            else:
                parts, w = stack(parts, 1), stack(w_t, 0)
            seq = []
            for t in range(parts.shape[0]):
                if zero and t == 0:
                    h, c = _lstm_step(parts[0], None)
                else:
                    h, c = _lstm_step(parts[t] + h.matmul(w), c)
                seq.append(h)
            if dirs == 1:
                layer_input = stack(seq, 0)
                finals.append((h, c))
            else:
                both = stack(seq, 0)
                layer_input = cat([both[:, 0], both[:, 1].flip(0)], -1)
                finals += [(h[0], c[0]), (h[1], c[1])]
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, finals


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare(input, hx, 1)
        out, finals = self._run(input, list(hx[0].unbind(0)), _gru_cell)
        return self._finish(out, finals, batched, 1)


class _CellBase(Module):
    def __init__(self, input_size, hidden_size, bias, gates, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty(gates * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(empty(gates * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(gates * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(empty(gates * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _batched(self, input, hx, n_states):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            hx = (z,) * n_states
        else:
            hx = hx if isinstance(hx, tuple) else (hx,)
            if not batched:
                hx = tuple(h.unsqueeze(0) for h in hx)
        return input, hx, batched


class RNNCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, (h,), batched = self._batched(input, hx, 1)
        h = _rnn_cell(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh, self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input, hx=None):
        input, hc, batched = self._batched(input, hx, 2)
        h, c = _lstm_cell(F.linear(input, self.weight_ih, self.bias_ih), hc, self.weight_hh,
                          self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h,), batched = self._batched(input, hx, 1)
        h = _gru_cell(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)
