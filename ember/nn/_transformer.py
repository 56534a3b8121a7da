"""Transformer layers, as PyTorch's: ``TransformerEncoderLayer`` and ``TransformerDecoderLayer`` and their stacks
``TransformerEncoder`` and ``TransformerDecoder``, with PyTorch's submodules, parameter names and initialisation.

Their inputs are ``src`` / ``tgt`` / ``memory``, so the random key for dropout is ``key=`` as for every other layer
(``MultiheadAttention`` itself calls it ``dropout_key=``, because its ``key`` is the keys tensor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember.numpy as enp
from ember import random
from ember.core.array import Array
from ember.core.pytree import tree_map
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._attention import MultiheadAttention
from ember.nn._checks import require_key
from ember.nn._containers import ModuleList
from ember.nn._dropout import Dropout
from ember.nn._linear import Linear
from ember.nn._module import Module
from ember.nn._normalization import LayerNorm
from ember.nn.functional._activations import gelu, relu
from ember.nn.functional._common import ArrayLike

__all__ = ["TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": relu, "gelu": gelu}


def _activation(layer: str, activation: str | Callable) -> Callable:
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise InvalidArgumentError(f"{layer}: activation should be 'relu' or 'gelu' (or a function), not "
                                       f"{activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise InvalidArgumentError(f"{layer}: activation should be 'relu', 'gelu' or a function, got "
                                   f"{type(activation).__name__}")
    return activation


def _random(module: Module) -> bool:
    """Whether calling ``module`` draws random numbers: some Dropout or attention in it trains with p > 0."""
    for m in module.modules():
        p = m.dropout if isinstance(m, MultiheadAttention) else getattr(m, "p", 0.0)
        if getattr(m, "training", False) and isinstance(p, float) and p > 0:
            return True
    return False


def _check_key(layer: Module, key: Array | None) -> None:
    if _random(layer):
        require_key(type(layer).__name__, "in training mode, dropout > 0", key, hint=" (or build it with dropout=0.0)")


def _keys(key: Array | None, n: int) -> list[Array | None]:
    return list(random.split(key, n)) if key is not None else [None] * n


def _drop(layer: Module, x: Array, key: Array | None) -> Array:
    return layer(x, key=key) if layer.training and layer.p > 0 else x


def _ff_block(layer: Module, x: Array, k_ff: Array | None, dropout: Dropout, key: Array | None) -> Array:
    """PyTorch's ``_ff_block``: ``linear2(dropout(activation(linear1(x))))``, then the residual's ``dropout``."""
    hidden = _drop(layer.dropout, layer.activation(layer.linear1(x)), k_ff)
    return _drop(dropout, layer.linear2(hidden), key)


def _check_input(name: str, x: Array, d_model: int, batch_first: bool) -> None:
    if x.ndim not in (2, 3) or x.shape[-1] != d_model:
        layout = "(N, L, d_model)" if batch_first else "(L, N, d_model)"
        raise ShapeError(f"expected {name} of shape {layout} or unbatched (L, d_model) with d_model = {d_model}, got "
                         f"{x.shape} ({x.dtype})")


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual and LayerNorm, as
    ``torch.nn.TransformerEncoderLayer`` (post-norm by default, pre-norm with ``norm_first=True``).

    Args:
        d_model: the number of features of the input.
        nhead: the number of attention heads.
        dim_feedforward: the feed-forward block's hidden size.
        dropout: dropout probability (attention weights, feed-forward hidden, each residual branch).
        activation: ``"relu"``, ``"gelu"`` or a function (or module) of one array.
        layer_norm_eps: the LayerNorms' eps.
        batch_first: inputs are (N, L, d_model) instead of (L, N, d_model).
        norm_first: LayerNorm before each block (pre-norm) instead of after the residual.
        bias: whether the Linear and LayerNorm layers have biases.
        key: the random key for the initial parameters.
        dtype: the parameters' dtype.

    Call as ``layer(src, src_mask=None, src_key_padding_mask=None, is_causal=False, *, key=None)``: the masks are
    those of ``MultiheadAttention`` (bool ``True`` = masked out, or floating, added); ``key`` is the random key for
    dropout, required in training mode when ``dropout > 0`` (``layer.eval()`` is deterministic).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, key=ember.random.key(0))
    >>> layer(enp.ones((3, 5, 8)), key=ember.random.key(1)).shape
    (3, 5, 8)
    >>> [name for name, _ in layer.named_parameters()][:3]
    ['self_attn.in_proj_weight', 'self_attn.in_proj_bias', 'self_attn.out_proj.weight']
    """

    self_attn: MultiheadAttention
    linear1: Linear
    dropout: Dropout
    linear2: Linear
    norm1: LayerNorm
    norm2: LayerNorm
    dropout1: Dropout
    dropout2: Dropout
    activation: Any
    norm_first: bool
    training: bool

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, *, key: Array, dtype: Any = None) -> None:  # fmt: skip
        k_attn, k1, k2 = random.split(key, 3)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            key=k_attn, dtype=dtype)  # fmt: skip
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, key=k1, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, key=k2, dtype=dtype)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = _activation("TransformerEncoderLayer", activation)
        self.norm_first = bool(norm_first)
        self.training = True

    def __call__(self, src: ArrayLike, src_mask: ArrayLike | None = None, src_key_padding_mask: ArrayLike | None = None,
                 is_causal: bool = False, *, key: Array | None = None) -> Array:  # fmt: skip
        x = enp.asarray(src)
        _check_input("src", x, self.self_attn.embed_dim, self.self_attn.batch_first)
        _check_key(self, key)
        k_attn, k_ff, k1, k2 = _keys(key, 4)

        def sa_block(x):
            out = self.self_attn(x, x, x, attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
                                 need_weights=False, is_causal=is_causal, dropout_key=k_attn)[0]  # fmt: skip
            return _drop(self.dropout1, out, k1)

        if self.norm_first:
            x = x + sa_block(self.norm1(x))
            return x + _ff_block(self, self.norm2(x), k_ff, self.dropout2, k2)
        x = self.norm1(x + sa_block(x))
        return self.norm2(x + _ff_block(self, x, k_ff, self.dropout2, k2))

    def extra_repr(self) -> str:
        return ""


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory`` and a feed-forward block, each with a residual and LayerNorm, as
    ``torch.nn.TransformerDecoderLayer`` (post-norm by default, pre-norm with ``norm_first=True``).

    Takes ``TransformerEncoderLayer``'s arguments. Call as ``layer(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False, *,
    key=None)``; ``key`` is the random key for dropout, required in training mode when ``dropout > 0``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, key=ember.random.key(0)).eval()
    >>> layer(enp.ones((4, 3, 8)), enp.ones((6, 3, 8))).shape
    (4, 3, 8)
    """

    self_attn: MultiheadAttention
    multihead_attn: MultiheadAttention
    linear1: Linear
    dropout: Dropout
    linear2: Linear
    norm1: LayerNorm
    norm2: LayerNorm
    norm3: LayerNorm
    dropout1: Dropout
    dropout2: Dropout
    dropout3: Dropout
    activation: Any
    norm_first: bool
    training: bool

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, *, key: Array, dtype: Any = None) -> None:  # fmt: skip
        k_self, k_cross, k1, k2 = random.split(key, 4)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            key=k_self, dtype=dtype)  # fmt: skip
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                                 key=k_cross, dtype=dtype)  # fmt: skip
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, key=k1, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, key=k2, dtype=dtype)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout) for _ in range(3))
        self.activation = _activation("TransformerDecoderLayer", activation)
        self.norm_first = bool(norm_first)
        self.training = True

    def __call__(self, tgt: ArrayLike, memory: ArrayLike, tgt_mask: ArrayLike | None = None,
                 memory_mask: ArrayLike | None = None, tgt_key_padding_mask: ArrayLike | None = None,
                 memory_key_padding_mask: ArrayLike | None = None, tgt_is_causal: bool = False,
                 memory_is_causal: bool = False, *, key: Array | None = None) -> Array:  # fmt: skip
        x, memory = enp.asarray(tgt), enp.asarray(memory)
        d_model, batch_first = self.self_attn.embed_dim, self.self_attn.batch_first
        _check_input("tgt", x, d_model, batch_first)
        _check_input("memory", memory, d_model, batch_first)
        if memory.ndim != x.ndim:
            raise ShapeError(f"tgt and memory must both be batched (3-D) or both unbatched (2-D), got tgt {x.shape} "
                             f"and memory {memory.shape}")
        _check_key(self, key)
        k_self, k_cross, k_ff, k1, k2, k3 = _keys(key, 6)

        def sa_block(x):
            out = self.self_attn(x, x, x, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,
                                 need_weights=False, is_causal=tgt_is_causal, dropout_key=k_self)[0]  # fmt: skip
            return _drop(self.dropout1, out, k1)

        def mha_block(x):
            out = self.multihead_attn(x, memory, memory, attn_mask=memory_mask,
                                      key_padding_mask=memory_key_padding_mask, need_weights=False,
                                      is_causal=memory_is_causal, dropout_key=k_cross)[0]  # fmt: skip
            return _drop(self.dropout2, out, k2)

        if self.norm_first:
            x = x + sa_block(self.norm1(x))
            x = x + mha_block(self.norm2(x))
            return x + _ff_block(self, self.norm3(x), k_ff, self.dropout3, k3)
        x = self.norm1(x + sa_block(x))
        x = self.norm2(x + mha_block(x))
        return self.norm3(x + _ff_block(self, x, k_ff, self.dropout3, k3))

    def extra_repr(self) -> str:
        return ""


def _clones(layer: Module, num_layers: int, stack: str, kind: type) -> ModuleList:
    if not isinstance(layer, kind):
        raise InvalidArgumentError(f"{stack}: expected a {kind.__name__} to copy, got {type(layer).__name__}")
    if int(num_layers) < 0:
        raise InvalidArgumentError(f"{stack}: num_layers must be non-negative, got {num_layers}")
    # PyTorch deep-copies the layer: every copy starts from the same values, in arrays of its own (name-based
    # replacement, as in functional_call, finds parameters by identity).
    return ModuleList([tree_map(lambda a: enp.array(a, copy=True), layer) for _ in range(int(num_layers))])


class TransformerEncoder(Module):
    """``num_layers`` copies of an encoder layer applied in turn, then an optional ``norm``, as
    ``torch.nn.TransformerEncoder`` (the copies start from the same parameters, as PyTorch's deep copies do).

    Call as ``encoder(src, mask=None, src_key_padding_mask=None, is_causal=None, *, key=None)``; ``key`` (for
    dropout in training mode) is split among the layers. Parameters are named ``layers.0.self_attn.in_proj_weight``,
    ..., ``norm.weight`` as in PyTorch.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, key=ember.random.key(0))
    >>> encoder = nn.TransformerEncoder(layer, num_layers=3).eval()
    >>> encoder(enp.ones((5, 2, 8))).shape
    (5, 2, 8)
    >>> len(encoder.parameters())
    36
    """

    layers: ModuleList
    num_layers: int
    norm: Module | None

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:  # fmt: skip
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder", TransformerEncoderLayer)
        self.num_layers = int(num_layers)
        self.norm = norm

    def __call__(self, src: ArrayLike, mask: ArrayLike | None = None, src_key_padding_mask: ArrayLike | None = None,
                 is_causal: bool | None = None, *, key: Array | None = None) -> Array:  # fmt: skip
        _check_key(self, key)
        x = enp.asarray(src)
        for layer, k in zip(self.layers, _keys(key, len(self.layers))):
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal), key=k)
        return x if self.norm is None else self.norm(x)

    def extra_repr(self) -> str:
        return ""


class TransformerDecoder(Module):
    """``num_layers`` copies of a decoder layer applied in turn, then an optional ``norm``, as
    ``torch.nn.TransformerDecoder`` (the copies start from the same parameters, as PyTorch's deep copies do).

    Call as ``decoder(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False, *, key=None)``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, key=ember.random.key(0))
    >>> decoder = nn.TransformerDecoder(layer, num_layers=2).eval()
    >>> decoder(enp.ones((4, 2, 8)), enp.ones((6, 2, 8))).shape
    (4, 2, 8)
    """

    layers: ModuleList
    num_layers: int
    norm: Module | None

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder", TransformerDecoderLayer)
        self.num_layers = int(num_layers)
        self.norm = norm

    def __call__(self, tgt: ArrayLike, memory: ArrayLike, tgt_mask: ArrayLike | None = None,
                 memory_mask: ArrayLike | None = None, tgt_key_padding_mask: ArrayLike | None = None,
                 memory_key_padding_mask: ArrayLike | None = None, tgt_is_causal: bool | None = None,
                 memory_is_causal: bool = False, *, key: Array | None = None) -> Array:  # fmt: skip
        _check_key(self, key)
        x = enp.asarray(tgt)
        for layer, k in zip(self.layers, _keys(key, len(self.layers))):
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                      memory_is_causal=memory_is_causal, key=k)  # fmt: skip
        return x if self.norm is None else self.norm(x)

    def extra_repr(self) -> str:
        return ""
