"""Norms and distances between vectors: ``normalize``, ``cosine_similarity``, ``pairwise_distance``, ``pdist``.

The p-norms here have PyTorch's derivatives at zero: the gradient of ``||v||`` at ``v = 0`` is 0 (not NaN),
so a zero row or two equal rows differentiate to finite values, as in PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike, floating_operands

__all__ = ["cosine_similarity", "normalize", "pairwise_distance", "pdist"]


def _broadcast_shape(op: str, x1: Array, x2: Array) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ShapeError(f"{op}: x1 of shape {x1.shape} and x2 of shape {x2.shape} do not broadcast together") from None


def _axis(op: str, dim: int, ndim: int) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise ShapeError(f"{op}: dim={dim} is out of range for an input of rank {ndim}")
    return dim % max(ndim, 1)


def vector_norm(v: Array, p: float, axis: int, keepdims: bool = False) -> Array:
    """``sum(|v|^p) ** (1/p)`` over ``axis`` (p = inf: max |v|; p = 0: the count of nonzeros), with PyTorch's
    gradient 0 where the norm is 0 (the plain formula's ``v / ||v||`` is 0/0 there)."""
    a = enp.abs(v)
    if p == math.inf:
        return enp.max(a, axis=axis, keepdims=keepdims) if v.shape[axis] else enp.sum(a, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return enp.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return lax.stop_gradient(enp.sum((a != 0).astype(v.dtype), axis=axis, keepdims=keepdims))
    if p == 1:
        return enp.sum(a, axis=axis, keepdims=keepdims)
    # |v|^p has an infinite derivative at 0 for p < 1; PyTorch's rule gives such components 0, as this does.
    nonzero = a > 0
    safe_a = enp.where(nonzero, a, enp.ones_like(a))
    powered = enp.where(nonzero, safe_a**2 if p == 2 else safe_a**p, enp.zeros_like(a))
    total = enp.sum(powered, axis=axis, keepdims=keepdims)
    positive = total > 0
    safe_total = enp.where(positive, total, enp.ones_like(total))
    root = enp.sqrt(safe_total) if p == 2 else safe_total ** (1.0 / p)
    return enp.where(positive, root, enp.zeros_like(total))


def _clamp_min_no_grad(x: Array, low: float) -> Array:
    """``max(x, low)`` in value with the derivative of ``x``: PyTorch clamps these under ``no_grad``."""
    return x + lax.stop_gradient(enp.maximum(x, low) - x)


def normalize(input: ArrayLike, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Array:
    """``input / max(||input||_p, eps)`` along ``dim``, as ``torch.nn.functional.normalize``.

    Args:
        input: any shape (a 0-d input is treated as a vector of one).
        p: the norm's exponent (``float('inf')`` for the max norm).
        dim: the axis the vectors lie along.
        eps: the smallest norm divided by (keeps a zero vector zero).

    Returns:
        an array of ``input``'s shape whose vectors along ``dim`` have unit p-norm (or are zero).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.normalize(enp.array([[0.0, 2.0], [0.0, 0.0]])).tolist()
    [[0.0, 1.0], [0.0, 0.0]]
    """
    (x,) = floating_operands("normalize", input)
    axis = _axis("normalize", dim, x.ndim)
    if x.ndim == 0:
        return x / enp.maximum(enp.abs(x), eps)
    return x / enp.maximum(vector_norm(x, float(p), axis, keepdims=True), eps)


def cosine_similarity(x1: ArrayLike, x2: ArrayLike, dim: int = 1, eps: float = 1e-8) -> Array:
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``, as ``torch.nn.functional.cosine_similarity``.

    Each vector is divided by its norm (clamped below at ``eps``) before the dot product, as PyTorch does,
    which keeps the result within [-1, 1].

    Args:
        x1, x2: arrays that broadcast together.
        dim: the axis the vectors lie along (of the broadcast shape).
        eps: the smallest norm divided by.

    Returns:
        the broadcast shape without ``dim``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.cosine_similarity(enp.array([[1.0, 0.0], [0.0, 1.0]]), enp.array([[0.0, 2.0], [0.0, -3.0]])).tolist()
    [0.0, -1.0]
    """
    a, b = floating_operands("cosine_similarity", x1, x2)
    shape = _broadcast_shape("cosine_similarity", a, b)
    a, b = enp.broadcast_to(a, shape), enp.broadcast_to(b, shape)
    if len(shape) == 0:
        a, b = a[None], b[None]
    axis = _axis("cosine_similarity", dim, len(shape))
    na = _clamp_min_no_grad(vector_norm(a, 2.0, axis, keepdims=True), eps)
    nb = _clamp_min_no_grad(vector_norm(b, 2.0, axis, keepdims=True), eps)
    return enp.sum((a / na) * (b / nb), axis=axis)


def pairwise_distance(x1: ArrayLike, x2: ArrayLike, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Array:
    """``||x1 - x2 + eps||_p`` along the last dimension, as ``torch.nn.functional.pairwise_distance``.

    Args:
        x1, x2: arrays that broadcast together, vectors along the last axis.
        p: the norm's exponent.
        eps: added to the difference (so equal vectors are ``eps * D**(1/p)`` apart, as in PyTorch).
        keepdim: keep the last axis with size 1.

    Returns:
        the broadcast shape without its last axis (kept with ``keepdim``).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.pairwise_distance(enp.array([[0.0, 0.0]]), enp.array([[3.0, 4.0]]), eps=0.0).tolist()
    [5.0]
    """
    a, b = floating_operands("pairwise_distance", x1, x2)
    shape = _broadcast_shape("pairwise_distance", a, b)
    diff = a - b + eps
    if len(shape) == 0:
        diff = diff[None]
        return vector_norm(diff, float(p), 0, keepdims=True) if keepdim else vector_norm(diff, float(p), 0)
    return vector_norm(diff, float(p), -1 % len(shape), keepdims=keepdim)


def pdist(input: ArrayLike, p: float = 2) -> Array:
    """The p-norm distance between every pair of rows ``i < j``, as ``torch.nn.functional.pdist``.

    Args:
        input: shape (N, M).
        p: the norm's exponent, at least 0.

    Returns:
        shape (N * (N - 1) / 2,): the distances in the order of ``numpy.triu_indices(N, 1)``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.pdist(enp.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0, 4.242640495300293]
    """
    (x,) = floating_operands("pdist", input)
    if x.ndim != 2:
        raise ShapeError(f"pdist: expected an input of shape (N, M), got shape {x.shape} ({x.dtype})")
    if p < 0:
        raise InvalidArgumentError(f"pdist: p must be at least 0, got p={p}")
    rows, cols = np.triu_indices(x.shape[0], 1)
    diff = enp.take(x, rows, axis=0) - enp.take(x, cols, axis=0)
    return vector_norm(diff, float(p), 1)
