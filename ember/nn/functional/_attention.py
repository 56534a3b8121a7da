"""``scaled_dot_product_attention`` and ``multi_head_attention_forward``: the attention behind
``nn.MultiheadAttention`` and the Transformer layers, computed as PyTorch computes it.

PyTorch names the keys tensor ``key``, which is also the name of ember's random key; in these functions
the random key for dropout is therefore the keyword ``dropout_key=``.
"""

from __future__ import annotations

import math

import ember.numpy as enp
from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike
from ember.nn.functional._dropout import dropout

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]

_HALF = ("float16", "bfloat16")


def _check_float(fn: str, name: str, x: Array) -> None:
    if not dtypes.is_floating(x.dtype):
        raise DTypeError(f"{fn}: {name} must be a floating array (float16, bfloat16, float32 or float64), got "
                         f"{x.dtype} of shape {x.shape}; cast it first, e.g. {name}.astype(enp.float32)")


def _check_mask_dtype(fn: str, name: str, mask: Array) -> None:
    if mask.dtype != enp.bool_ and not dtypes.is_floating(mask.dtype):
        raise DTypeError(f"{fn}: {name} must be a bool mask or a floating array added to the scores, got {mask.dtype} "
                         f"of shape {mask.shape}; convert it with {name}.astype(bool) or .astype(enp.float32)")


def _check_dropout(fn: str, p: float, dropout_key: Array | None) -> None:
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"{fn}: dropout probability must be between 0 and 1, got {p}")
    if p > 0.0 and dropout_key is None:
        raise InvalidArgumentError(
            f"{fn}: dropout of the attention weights (p={p}) needs a random key: pass "
            f"dropout_key=ember.random.key(...) "
            f"(the keyword is dropout_key because `key` is the keys tensor), or use p=0.0 / eval mode for "
            f"deterministic results")


def _dropout(x: Array, p: float, dropout_key: Array | None) -> Array:
    """Inverted dropout (``F.dropout``): zero each element with probability ``p``, scale the rest by ``1 / (1 - p)``."""
    return x if p == 0.0 else dropout(x, p, key=dropout_key)


def _softmax(scores: Array) -> Array:
    """Softmax over the last axis; a row whose scores are all -inf (every key masked) gives zeros, as PyTorch's
    ``scaled_dot_product_attention`` does, with finite gradients."""
    m = lax.stop_gradient(enp.max(scores, axis=-1, keepdims=True, initial=-math.inf))
    m = enp.where(enp.isfinite(m), m, 0)
    e = enp.exp(scores - m)
    total = enp.sum(e, axis=-1, keepdims=True)
    return e / enp.where(total == 0, 1, total)


def _attend(q: Array, k: Array, v: Array, scale: float, allowed: Array | None, bias: Array | None, dropout_p: float,
            dropout_key: Array | None) -> tuple[Array, Array]:  # fmt: skip
    """``softmax(q k^T * scale + bias, masked where not allowed) v`` over the last two axes; also the weights.
    Half-precision inputs are computed in float32 and the results rounded back, as PyTorch's CPU kernels do."""
    out_dtype = q.dtype
    if str(out_dtype) in _HALF:
        q, k, v = q.astype(enp.float32), k.astype(enp.float32), v.astype(enp.float32)
        bias = None if bias is None else bias.astype(enp.float32)
    scores = enp.matmul(q, enp.swapaxes(k, -1, -2)) * scale
    if bias is not None:
        scores = scores + bias.astype(scores.dtype)
    if allowed is not None:
        scores = enp.where(allowed, scores, -math.inf)
    weights = _dropout(_softmax(scores), dropout_p, dropout_key)
    return enp.matmul(weights, v).astype(out_dtype), weights.astype(out_dtype)


def scaled_dot_product_attention(query: ArrayLike, key: ArrayLike, value: ArrayLike, attn_mask: ArrayLike | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False, *, dropout_key: Array | None = None) -> Array:  # fmt: skip
    """``softmax(query @ key^T * scale + mask) @ value``, as ``torch.nn.functional.scaled_dot_product_attention``.

    Args:
        query: shape (..., L, E).
        key: shape (..., S, E); here ``key`` is the keys tensor, as in PyTorch.
        value: shape (..., S, Ev).
        attn_mask: broadcastable to (..., L, S). A bool mask says which scores take part (``True`` = attend);
            a floating mask is added to the scores. Not together with ``is_causal`` (an error, as in PyTorch).
        dropout_p: dropout probability on the attention weights (needs ``dropout_key`` when above 0).
        is_causal: attend only to keys at positions ``<=`` the query's (the lower triangle of (L, S), aligned
            top-left).
        scale: the factor on the scores; default ``1 / sqrt(E)``.
        enable_gqa: grouped-query attention: the head axis (-3) of ``key`` and ``value`` may divide the query's;
            each key/value head serves ``Hq // Hk`` consecutive query heads.
        dropout_key: the random key for dropout (named ``dropout_key`` because ``key`` is the keys tensor).

    Returns:
        shape (..., L, Ev). A query whose every key is masked gets zeros (as PyTorch's), not NaN.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> q = enp.ones((1, 2, 4)); k = enp.ones((3, 4)); v = enp.arange(6.0).reshape(3, 2)
    >>> F.scaled_dot_product_attention(q, k, v).tolist()
    [[[2.0, 3.0], [2.0, 3.0]]]
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).tolist()
    [[[0.0, 1.0], [1.0, 2.0]]]
    """
    fn = "scaled_dot_product_attention"
    q, k, v = enp.asarray(query), enp.asarray(key), enp.asarray(value)
    for name, x in (("query", q), ("key", k), ("value", v)):
        _check_float(fn, name, x)
        if x.ndim < 2:
            raise ShapeError(f"{fn}: {name} must have at least 2 dimensions (..., sequence, features), got shape "
                             f"{x.shape} ({x.dtype})")
    if not (q.dtype == k.dtype == v.dtype):
        raise DTypeError(f"{fn}: query, key and value must have one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"{fn}: query {q.shape}, key {k.shape} and value {v.shape} do not fit: query and key need the "
                         f"same last dimension (E), key and value the same sequence length (S, second to last)")
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3:
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise ShapeError(f"{fn}: with enable_gqa the number of query heads ({hq}, axis -3 of {q.shape}) must be a "
                             f"multiple of the key's ({hk}) and the value's ({hv})")
        k, v = enp.repeat(k, hq // hk, axis=-3), enp.repeat(v, hq // hv, axis=-3)
    _check_dropout(fn, dropout_p, dropout_key)
    L, S = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    try:
        batch = enp.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except Exception:
        raise ShapeError(f"{fn}: the batch dimensions of query {q.shape}, key {k.shape} and value {v.shape} do not "
                         f"broadcast together") from None
    allowed = bias = None
    if is_causal and attn_mask is not None:
        raise InvalidArgumentError(f"{fn}: give either attn_mask or is_causal=True, not both (as PyTorch); to combine "
                                   f"them, pass attn_mask=mask & enp.tril(enp.ones((L, S), bool))")
    if attn_mask is not None:
        mask = enp.asarray(attn_mask)
        _check_mask_dtype(fn, "attn_mask", mask)
        try:
            enp.broadcast_shapes(mask.shape, (*batch, L, S))
        except Exception:
            raise ShapeError(f"{fn}: attn_mask of shape {mask.shape} does not broadcast to the scores' shape "
                             f"{(*batch, L, S)} (batch..., L, S)") from None
        if mask.dtype == enp.bool_:
            allowed = mask
        else:
            bias = mask
    if is_causal:
        allowed = enp.tril(enp.ones((L, S), dtype=bool))
    return _attend(q, k, v, scale, allowed, bias, dropout_p, dropout_key)[0]


# --- multi-head attention ---------------------------------------------------------------------------


def _mask_as_bias(mask: Array | None, dtype) -> Array | None:
    """PyTorch's ``_canonical_mask``: a bool mask (``True`` = masked out) as an additive -inf/0 float mask."""
    if mask is None or mask.dtype != enp.bool_:
        return mask
    return enp.where(mask, -math.inf, 0.0).astype(dtype)


def multi_head_attention_forward(
    query: ArrayLike, key: ArrayLike, value: ArrayLike, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: ArrayLike | None, in_proj_bias: ArrayLike | None, bias_k: ArrayLike | None,
    bias_v: ArrayLike | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: ArrayLike,
    out_proj_bias: ArrayLike | None, training: bool = True, key_padding_mask: ArrayLike | None = None,
    need_weights: bool = True, attn_mask: ArrayLike | None = None, use_separate_proj_weight: bool = False,
    q_proj_weight: ArrayLike | None = None, k_proj_weight: ArrayLike | None = None,
    v_proj_weight: ArrayLike | None = None, static_k: ArrayLike | None = None, static_v: ArrayLike | None = None,
    average_attn_weights: bool = True, is_causal: bool = False, *, dropout_key: Array | None = None,
) -> tuple[Array, Array | None]:  # fmt: skip
    """Multi-head attention with its projections, as ``torch.nn.functional.multi_head_attention_forward``.

    Sequence-first layout: ``query`` (L, N, E) or unbatched (L, E); ``key`` / ``value`` (S, N, kdim/vdim) or
    (S, kdim/vdim). Masks follow PyTorch's ``MultiheadAttention``: a bool ``attn_mask`` / ``key_padding_mask``
    marks the positions NOT attended (``True`` = masked out, the opposite of ``scaled_dot_product_attention``);
    a floating one is added to the scores. ``attn_mask`` is (L, S) or (N * num_heads, L, S);
    ``key_padding_mask`` is (N, S) or (S,). ``is_causal`` is a hint that ``attn_mask`` is the causal mask
    (it is required with it); as in PyTorch, without ``key_padding_mask`` and with ``need_weights=False`` the
    causal mask is applied in its place.

    Args:
        dropout_p: dropout on the attention weights, applied when ``training`` (then ``dropout_key`` is needed;
            it is named ``dropout_key`` because ``key`` is the keys tensor).
        need_weights / average_attn_weights: return the attention weights, averaged over the heads or not.

    Returns:
        ``(attn_output, attn_weights)``: (L, N, E) or (L, E), and (N, L, S) / (N, num_heads, L, S) (without
        the N axis when unbatched) or None. A query whose every key is masked gets zero weights (PyTorch gives
        NaN there when ``need_weights=True``, zeros otherwise).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x = enp.ones((3, 2, 4))
    >>> out, w = F.multi_head_attention_forward(x, x, x, 4, 2, enp.eye(12, 4), None, None, None, False, 0.0,
    ...                                         enp.eye(4), None)
    >>> out.shape, w.shape
    ((3, 2, 4), (2, 3, 3))
    """
    fn = "multi_head_attention_forward"
    query, key, value = enp.asarray(query), enp.asarray(key), enp.asarray(value)
    for name, x in (("query", query), ("key", key), ("value", value)):
        _check_float(fn, name, x)
    batched = _check_shapes(fn, query, key, value, key_padding_mask, attn_mask, num_heads)
    if key_padding_mask is not None:
        key_padding_mask = enp.asarray(key_padding_mask)
        _check_mask_dtype(fn, "key_padding_mask", key_padding_mask)
    if attn_mask is not None:
        attn_mask = enp.asarray(attn_mask)
        _check_mask_dtype(fn, "attn_mask", attn_mask)
    if not batched:
        query, key, value = query[:, None], key[:, None], value[:, None]
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask[None]
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise ShapeError(f"{fn}: expected the query's embedding dimension {embed_dim_to_check}, got query of shape "
                         f"{query.shape} ({query.dtype})")
    head_dim = E // num_heads
    if head_dim * num_heads != E:
        raise InvalidArgumentError(f"{fn}: embed_dim {E} is not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise ShapeError(f"{fn}: key's sequence and batch dimensions {key.shape[:2]} differ from value's "
                         f"{value.shape[:2]} (key {key.shape}, value {value.shape})")
    dtype = query.dtype
    key_padding_mask = _mask_as_bias(key_padding_mask, dtype)
    if is_causal and attn_mask is None:
        raise InvalidArgumentError(
            f"{fn}: is_causal=True is a hint that attn_mask is the causal mask and needs that attn_mask; pass "
            f"attn_mask=enp.triu(enp.ones((L, L), bool), 1) (True above the diagonal: masked out)")
    causal = is_causal and key_padding_mask is None and not need_weights
    attn_mask = None if causal else _mask_as_bias(attn_mask, dtype)

    if in_proj_bias is None:
        b_q = b_k = b_v = None
    else:
        b_q, b_k, b_v = enp.split(enp.asarray(in_proj_bias), 3)
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise InvalidArgumentError(f"{fn}: use_separate_proj_weight=True needs q_proj_weight, k_proj_weight and "
                                       f"v_proj_weight")
        w_q, w_k, w_v = enp.asarray(q_proj_weight), enp.asarray(k_proj_weight), enp.asarray(v_proj_weight)
    else:
        if in_proj_weight is None:
            raise InvalidArgumentError(f"{fn}: in_proj_weight is None; pass it or use_separate_proj_weight=True")
        w_q, w_k, w_v = enp.split(enp.asarray(in_proj_weight), 3)
    for name, x, w in (("query", query, w_q), ("key", key, w_k), ("value", value, w_v)):
        if w.ndim != 2 or w.shape != (E, x.shape[-1]):
            raise ShapeError(f"{fn}: the {name} projection weight has shape {w.shape}, expected {(E, x.shape[-1])} "
                             f"for a {name} of shape {x.shape} (embed_dim {E})")
    q = _project(query, w_q, b_q)
    k = _project(key, w_k, b_k)
    v = _project(value, w_v, b_v)

    if attn_mask is not None:
        expected = {2: (L, S), 3: (N * num_heads, L, S)}.get(attn_mask.ndim)
        if attn_mask.shape != expected:
            raise ShapeError(f"{fn}: attn_mask has shape {attn_mask.shape}; expected (L, S) = {(L, S)} or "
                             f"(N * num_heads, L, S) = {(N * num_heads, L, S)}")
        attn_mask = attn_mask[None] if attn_mask.ndim == 2 else attn_mask
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise InvalidArgumentError(f"{fn}: bias_k/bias_v cannot be added to a static key or value")
        k = enp.concatenate([k, enp.broadcast_to(enp.asarray(bias_k).reshape(1, 1, E), (1, N, E)).astype(k.dtype)])
        v = enp.concatenate([v, enp.broadcast_to(enp.asarray(bias_v).reshape(1, 1, E), (1, N, E)).astype(v.dtype)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    elif (bias_k is None) != (bias_v is None):
        raise InvalidArgumentError(f"{fn}: give both bias_k and bias_v, or neither")

    # (L, N, E) -> (N, H, L, head_dim); static_k/static_v come as PyTorch's (N * H, S, head_dim).
    q = q.reshape(L, N, num_heads, head_dim).transpose(1, 2, 0, 3)
    k = _heads(fn, "static_k", static_k, k, N, num_heads, head_dim)
    v = _heads(fn, "static_v", static_v, v, N, num_heads, head_dim)
    if add_zero_attn:
        k = enp.concatenate([k, enp.zeros((N, num_heads, 1, head_dim), k.dtype)], axis=2)
        v = enp.concatenate([v, enp.zeros((N, num_heads, 1, head_dim), v.dtype)], axis=2)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    S = k.shape[2]
    bias = None
    if attn_mask is not None:
        bias = attn_mask.reshape(-1, num_heads, L, S) if attn_mask.shape[0] != 1 else attn_mask[None]
    if key_padding_mask is not None:
        if key_padding_mask.shape != (N, S):
            raise ShapeError(f"{fn}: key_padding_mask has shape {key_padding_mask.shape}; expected (N, S) = {(N, S)}")
        kpm = key_padding_mask.reshape(N, 1, 1, S)
        bias = kpm if bias is None else bias + kpm
    dropout_p = float(dropout_p) if training else 0.0
    _check_dropout(fn, dropout_p, dropout_key)
    allowed = enp.tril(enp.ones((L, S), dtype=bool)) if causal else None
    out, weights = _attend(q, k, v, 1.0 / math.sqrt(head_dim), allowed, bias, dropout_p, dropout_key)
    out = out.transpose(2, 0, 1, 3).reshape(L, N, E)
    out = _project(out, enp.asarray(out_proj_weight), out_proj_bias)
    if not batched:
        out = out[:, 0]
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = enp.mean(weights, axis=1)
    return out, weights if batched else weights[0]


def _project(x: Array, w: Array, b: ArrayLike | None) -> Array:
    out = enp.matmul(x, w.T)
    return out if b is None else out + b


def _pad_last(mask: Array | None) -> Array | None:
    """A zero column after the last key (PyTorch's ``pad(mask, (0, 1))``): the appended key is not masked."""
    if mask is None:
        return None
    return enp.concatenate([mask, enp.zeros((*mask.shape[:-1], 1), mask.dtype)], axis=-1)


def _heads(fn: str, name: str, static: ArrayLike | None, x: Array, n: int, h: int, head_dim: int) -> Array:
    if static is None:
        return x.reshape(x.shape[0], n, h, head_dim).transpose(1, 2, 0, 3)
    static = enp.asarray(static)
    if static.ndim != 3 or static.shape[0] != n * h or static.shape[2] != head_dim:
        raise ShapeError(f"{fn}: {name} has shape {static.shape}; expected (N * num_heads, S, head_dim) with "
                         f"N * num_heads = {n * h} and head_dim = {head_dim}")
    return static.reshape(n, h, static.shape[1], head_dim)


def _check_shapes(fn: str, query: Array, key: Array, value: Array, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """PyTorch's ``_mha_shape_check``: whether the inputs are batched (3-D) or unbatched (2-D), checking the rest."""
    shapes = f"query {query.shape}, key {key.shape}, value {value.shape}"
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise ShapeError(f"{fn}: for a batched (3-D) query, key and value must be 3-D; got {shapes}")
        if key_padding_mask is not None and enp.ndim(key_padding_mask) != 2:
            raise ShapeError(f"{fn}: for batched inputs key_padding_mask must be 2-D (N, S), got shape "
                             f"{enp.shape(key_padding_mask)}")
        if attn_mask is not None and enp.ndim(attn_mask) not in (2, 3):
            raise ShapeError(f"{fn}: attn_mask must be 2-D (L, S) or 3-D (N * num_heads, L, S), got shape "
                             f"{enp.shape(attn_mask)}")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise ShapeError(f"{fn}: for an unbatched (2-D) query, key and value must be 2-D; got {shapes}")
        if key_padding_mask is not None and enp.ndim(key_padding_mask) != 1:
            raise ShapeError(f"{fn}: for unbatched inputs key_padding_mask must be 1-D (S,), got shape "
                             f"{enp.shape(key_padding_mask)}")
        if attn_mask is not None:
            shape = enp.shape(attn_mask)
            if len(shape) not in (2, 3) or (len(shape) == 3 and shape[0] != num_heads):
                raise ShapeError(f"{fn}: for unbatched inputs attn_mask must be 2-D (L, S) or 3-D (num_heads, L, S) "
                                 f"with num_heads={num_heads}, got shape {shape}")
        return False
    raise ShapeError(f"{fn}: query must be 3-D (L, N, E) (or (N, L, E) with batch_first) or unbatched 2-D (L, E); got "
                     f"{shapes}")
