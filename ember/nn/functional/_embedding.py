"""``embedding``: rows of a weight matrix looked up by index, with PyTorch's ``padding_idx``, ``max_norm`` and
``scale_grad_by_freq``."""

from __future__ import annotations

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.errors import ConcretizationError, DTypeError, EmberIndexError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike

__all__ = ["embedding"]


def normalize_padding_idx(op: str, padding_idx: int | None, num_embeddings: int) -> int | None:
    """``padding_idx`` as a non-negative row index (PyTorch counts a negative one from the end)."""
    if padding_idx is None:
        return None
    padding_idx = int(padding_idx)
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise InvalidArgumentError(f"{op}: padding_idx={padding_idx} must be within num_embeddings={num_embeddings} "
                                   f"(from {-num_embeddings} to {num_embeddings - 1})")  # fmt: skip
    return padding_idx % num_embeddings


def _check_indices(idx: Array, n: int) -> None:
    """Out-of-range indices raise eagerly, as in PyTorch; traced ones look up NaN rows (``take``'s fill)."""
    try:
        values = idx._concrete("embedding")
    except ConcretizationError:
        return
    if values.size and (values.min() < 0 or values.max() >= n):
        bad = values[(values < 0) | (values >= n)]
        raise EmberIndexError(f"embedding: index {int(bad.flat[0])} is out of range for a weight with {n} rows "
                              f"(indices must be in [0, {n - 1}])")  # fmt: skip


def embedding(input: ArrayLike, weight: ArrayLike, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Array:  # fmt: skip
    """``weight[input]``: the rows of ``weight`` at the integer indices ``input``, as ``torch.nn.functional.embedding``.

    Args:
        input: integer indices, any shape.
        weight: shape (num_embeddings, embedding_dim).
        padding_idx: a row whose gradient is zero (negative counts from the end); its value is looked up as is.
        max_norm: rows looked up whose ``norm_type``-norm exceeds it are scaled to norm ``max_norm``
            (``max_norm / (norm + 1e-7)``). PyTorch also rewrites those rows of ``weight`` in place; ember
            returns the rescaled rows and leaves ``weight`` unchanged. The gradient is PyTorch's: the
            rescaling is not differentiated (PyTorch applies it under ``no_grad``).
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by the number of times its index occurs in ``input``.
        sparse: PyTorch's sparse gradients; not supported (must be False).

    Returns:
        shape ``input.shape + (embedding_dim,)``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> w = enp.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]])
    >>> F.embedding(enp.array([2, 1]), w).tolist()
    [[1.0, 1.0], [3.0, 4.0]]
    >>> [round(v, 4) for v in F.embedding(enp.array([1]), w, max_norm=1.0)[0].tolist()]
    [0.6, 0.8]
    """
    idx, weight = enp.asarray(input), enp.asarray(weight)
    if not enp.issubdtype(idx.dtype, enp.integer):
        raise DTypeError(f"embedding: the indices must be integers, got shape {idx.shape} and dtype {idx.dtype}; "
                         f"convert them with x.astype('int32')")  # fmt: skip
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape} "
                         f"({weight.dtype})")  # fmt: skip
    if sparse:
        raise InvalidArgumentError("embedding: sparse=True (PyTorch's sparse gradients) is not supported; gradients "
                                   "are dense, pass sparse=False")  # fmt: skip
    n = weight.shape[0]
    padding_idx = normalize_padding_idx("embedding", padding_idx, n)
    _check_indices(idx, n)
    rows = enp.take(weight, idx, axis=0)
    if max_norm is not None:
        if not enp.issubdtype(weight.dtype, enp.floating):
            raise DTypeError(f"embedding: max_norm rescales rows, so the weight must be floating, got "
                             f"{weight.dtype}; pass max_norm=None or a floating weight")  # fmt: skip
        fixed = lax.stop_gradient(rows)
        norm = enp.linalg.norm(fixed, ord=norm_type, axis=-1, keepdims=True)
        scale = enp.where(norm > max_norm, max_norm / (norm + 1e-7), enp.ones((), norm.dtype))
        # The rescaled rows' value with the plain lookup's derivative (PyTorch renormalises under no_grad).
        rows = lax.stop_gradient(fixed * scale) + (rows - fixed)
    if scale_grad_by_freq and enp.issubdtype(rows.dtype, enp.inexact):
        flat = idx.reshape(-1)
        counts = enp.zeros((n,), rows.dtype).at[flat].add(enp.ones(flat.shape, rows.dtype))
        freq = enp.take(counts, idx, axis=0)[..., None]
        fixed = lax.stop_gradient(rows)
        rows = fixed + (rows - fixed) / enp.maximum(freq, enp.ones((), freq.dtype))
    if padding_idx is not None:
        rows = enp.where((idx == padding_idx)[..., None], lax.stop_gradient(rows), rows)
    return rows
