"""``MultiheadAttention``, as ``torch.nn.MultiheadAttention``: PyTorch's parameters, names, initialisation and masks.

PyTorch's second argument ``key`` is the keys tensor, so the random key for attention dropout is the keyword
``dropout_key=`` here (every other layer calls it ``key=``).
"""

from __future__ import annotations

import math
from typing import Any

import ember.numpy as enp
from ember import random
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._checks import require_key
from ember.nn._linear import Linear
from ember.nn._module import Module, rebuild
from ember.nn.functional._attention import multi_head_attention_forward
from ember.nn.functional._common import ArrayLike

__all__ = ["MultiheadAttention"]


def xavier_uniform(key: Array, shape: tuple[int, int], dtype: Any = None) -> Array:
    """PyTorch's ``xavier_uniform_`` for a 2-D weight (out, in): uniform on +-sqrt(6 / (in + out))."""
    bound = math.sqrt(6.0 / (shape[0] + shape[1]))
    return random.uniform(key, shape, dtype=dtype, minval=-bound, maxval=bound)


class MultiheadAttention(Module):
    """Multi-head attention, as ``torch.nn.MultiheadAttention``, with PyTorch's parameters and initialisation.

    Parameters (PyTorch's names): ``in_proj_weight`` (3E, E) when ``kdim == vdim == embed_dim``, otherwise
    ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim), ``v_proj_weight`` (E, vdim), all xavier-uniform;
    ``in_proj_bias`` (3E,) zeros; ``out_proj`` a ``Linear(E, E)`` with a zero bias; with ``add_bias_kv``,
    ``bias_k`` and ``bias_v`` (1, 1, E), xavier-normal.

    Args:
        embed_dim: E, the query's features and the output's.
        num_heads: the number of heads; must divide ``embed_dim``.
        dropout: dropout probability on the attention weights in training mode.
        bias: whether the projections have biases.
        add_bias_kv: append a learned key and value (``bias_k``, ``bias_v``) to the sequences.
        add_zero_attn: append a zero key and value to the sequences.
        kdim, vdim: the key's and value's features (default ``embed_dim``).
        batch_first: inputs and outputs are (N, L, E) instead of (L, N, E).
        key: the random key for the initial parameters.
        dtype: the parameters' dtype (default float32).

    Call as ``mha(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False, *, dropout_key=None)``; ``key`` is the keys tensor (as in
    PyTorch) and ``dropout_key`` the random key that dropout needs in training mode when ``dropout > 0``.
    A bool ``attn_mask`` / ``key_padding_mask`` marks the positions NOT attended (``True`` = masked out), a
    floating one is added to the scores; ``attn_mask`` is (L, S) or (N * num_heads, L, S). Returns
    ``(attn_output, attn_weights)``, the weights averaged over heads (N, L, S), per head (N, num_heads, L, S),
    or None with ``need_weights=False``. Unbatched inputs (L, E) work as in PyTorch. A query whose every key is
    masked gets zero weights (PyTorch gives NaN there when ``need_weights=True``).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> mha = nn.MultiheadAttention(8, 2, batch_first=True, key=ember.random.key(0))
    >>> x = enp.ones((3, 5, 8))
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    >>> [name for name, _ in mha.named_parameters()]
    ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
    """

    in_proj_weight: Array | None
    q_proj_weight: Array | None
    k_proj_weight: Array | None
    v_proj_weight: Array | None
    in_proj_bias: Array | None
    bias_k: Array | None
    bias_v: Array | None
    out_proj: Module
    embed_dim: int
    kdim: int
    vdim: int
    num_heads: int
    head_dim: int
    dropout: float
    add_zero_attn: bool
    batch_first: bool
    training: bool

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, *, key: Array,
                 dtype: Any = None) -> None:  # fmt: skip
        if embed_dim <= 0 or num_heads <= 0:
            raise InvalidArgumentError(f"MultiheadAttention: embed_dim and num_heads must be positive, got "
                                       f"embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise InvalidArgumentError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                                       f"({num_heads})")
        if not 0.0 <= dropout <= 1.0:
            raise InvalidArgumentError(f"MultiheadAttention: dropout must be between 0 and 1, got {dropout}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.kdim = int(kdim) if kdim is not None else self.embed_dim
        self.vdim = int(vdim) if vdim is not None else self.embed_dim
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout, self.add_zero_attn, self.batch_first = float(dropout), bool(add_zero_attn), bool(batch_first)
        self.training = True
        E = self.embed_dim
        k_in, k_q, k_k, k_v, k_out, k_bk, k_bv = random.split(key, 7)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = xavier_uniform(k_in, (3 * E, E), dtype)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight = xavier_uniform(k_q, (E, E), dtype)
            self.k_proj_weight = xavier_uniform(k_k, (E, self.kdim), dtype)
            self.v_proj_weight = xavier_uniform(k_v, (E, self.vdim), dtype)
        out_proj = Linear(E, E, bias=bias, key=k_out, dtype=dtype)
        if bias:
            self.in_proj_bias = enp.zeros(3 * E, dtype=out_proj.weight.dtype)
            out_proj = rebuild(out_proj, bias=enp.zeros(E, dtype=out_proj.weight.dtype))
        else:
            self.in_proj_bias = None
        self.out_proj = out_proj
        if add_bias_kv:
            std = math.sqrt(1.0 / E)  # xavier_normal_ of (1, 1, E): fan_in = fan_out = E
            self.bias_k = random.normal(k_bk, (1, 1, E), dtype=dtype) * std
            self.bias_v = random.normal(k_bv, (1, 1, E), dtype=dtype) * std
        else:
            self.bias_k = self.bias_v = None

    @property
    def _qkv_same_embed_dim(self) -> bool:
        return self.kdim == self.embed_dim and self.vdim == self.embed_dim

    def __call__(self, query: ArrayLike, key: ArrayLike, value: ArrayLike, key_padding_mask: ArrayLike | None = None,
                 need_weights: bool = True, attn_mask: ArrayLike | None = None, average_attn_weights: bool = True,
                 is_causal: bool = False, *,
                 dropout_key: Array | None = None) -> tuple[Array, Array | None]:  # fmt: skip
        query, key, value = enp.asarray(query), enp.asarray(key), enp.asarray(value)
        self._check(query, key, value)
        if self.training and self.dropout > 0:
            require_key("MultiheadAttention", f"in training mode, dropout={self.dropout} of the attention weights",
                        dropout_key, keyword="dropout_key",
                        note="; the keyword is dropout_key because `key` is the keys tensor")  # fmt: skip
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = (x.transpose(1, 0, 2) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal, dropout_key=dropout_key)
        if self.batch_first and batched:
            out = out.transpose(1, 0, 2)
        return out, weights

    def _check(self, query: Array, key: Array, value: Array) -> None:
        def describe(x):
            return f"{x.shape} ({x.dtype})"

        if query.ndim not in (2, 3) or query.shape[-1] != self.embed_dim:
            layout = "(N, L, E)" if self.batch_first else "(L, N, E)"
            raise ShapeError(f"expected a query of shape {layout} or unbatched (L, E) with E = embed_dim = "
                             f"{self.embed_dim}, got {describe(query)}")
        for name, x, dim in (("key", key, self.kdim), ("value", value, self.vdim)):
            if x.ndim != query.ndim or x.shape[-1] != dim:
                raise ShapeError(f"expected a {name} with {query.ndim} dimensions like the query and last dimension "
                                 f"{name[0]}dim = {dim}, got {describe(x)} (query {describe(query)})")
        batch_axis = 0 if self.batch_first else 1
        if query.ndim == 3 and not query.shape[batch_axis] == key.shape[batch_axis] == value.shape[batch_axis]:
            raise ShapeError(f"query, key and value must have one batch size (axis {batch_axis}), got query "
                             f"{describe(query)}, key {describe(key)}, value {describe(value)}")

    def extra_repr(self) -> str:
        return ""
