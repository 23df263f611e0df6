"""Attention and Transformer layers: ``MultiheadAttention``, ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder`` and
``F.scaled_dot_product_attention``, composed of the eager operations, with PyTorch's
parameter names, initialisation and mask conventions."""
from __future__ import annotations

import copy
import math

import numpy as np

from ..creation import empty, zeros
from ..tensor import Tensor
from . import functional as F
from . import init
from .containers import ModuleList
from .layers import Dropout, Linear
from .modules import Module, Parameter
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer",
           "scaled_dot_product_attention"]


_additive = F._additive
scaled_dot_product_attention = F.scaled_dot_product_attention


class _OutProj(Linear):
    """PyTorch's name for the output projection's class."""

    def _get_name(self):
        return "NonDynamicallyQuantizableLinear"


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = _OutProj(embed_dim, embed_dim, bias=bias, dtype=dtype)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights,
                                    attn_mask, average_attn_weights, is_causal)
        if not batched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                average_attn_weights, is_causal):
        tgt_len, bsz, e = query.shape
        src_len = key.shape[0]
        h, hd = self.num_heads, self.head_dim
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {e}")
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        q = F.linear(query, wq, bq)
        k = F.linear(key, wk, bk)
        v = F.linear(value, wv, bv)
        # (L, N, E) -> (N * H, L, head_dim)
        q = q.reshape(tgt_len, bsz * h, hd).transpose(0, 1)
        k = k.reshape(src_len, bsz * h, hd).transpose(0, 1)
        v = v.reshape(src_len, bsz * h, hd).transpose(0, 1)
        if is_causal and attn_mask is None:
            attn_mask = Tensor._plain(np.triu(np.ones((tgt_len, src_len), np.bool_), 1))
        mask = _additive(attn_mask, q.dtype, masked_is_true=True)
        if mask is not None and mask.dim() == 3:
            mask = mask.reshape(bsz * h, tgt_len, src_len)
        if key_padding_mask is not None:
            kpm = _additive(key_padding_mask, q.dtype, masked_is_true=True)
            kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, h, 1, src_len)
            kpm = kpm.reshape(bsz * h, 1, src_len)
            mask = kpm if mask is None else mask + kpm
        scores = q.matmul(k.transpose(1, 2)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            scores = scores + mask
        weights = scores.softmax(-1)
        if self.dropout > 0.0 and self.training:
            weights = F.dropout(weights, self.dropout, True)
        out = weights.matmul(v)                                   # (N * H, L, hd)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, e)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(tgt_len, bsz, e)
        if not need_weights:
            return out, None
        weights = weights.reshape(bsz, h, tgt_len, src_len)
        return out, (weights.mean(1) if average_attn_weights else weights)


def _activation(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


class TransformerEncoderLayer(Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm``."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal) and mask is None)
        return self.norm(out) if self.norm is not None else out


class TransformerDecoder(Module):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask)
        return self.norm(out) if self.norm is not None else out


def generate_square_subsequent_mask(sz, device=None, dtype=None):
    """A float (sz, sz) mask: 0 on and below the diagonal, -inf above (future positions)."""
    dtype = zeros(1, dtype=dtype).dtype
    return Tensor._plain(np.triu(np.full((sz, sz), -np.inf, dtype), 1))


class Transformer(Module):
    """PyTorch's encoder-decoder Transformer: stacks of encoder and decoder layers, each
    stack followed by a LayerNorm; matrices initialised xavier-uniform."""

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        opts = dict(dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                    batch_first=batch_first, norm_first=norm_first, bias=bias, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, dim_feedforward, **opts),
                num_encoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                              dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, dim_feedforward, **opts),
                num_decoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                              dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask)
