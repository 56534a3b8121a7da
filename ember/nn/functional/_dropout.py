"""Dropout: ``dropout``, the channel-wise ``dropout1d`` / ``dropout2d`` / ``dropout3d``, ``alpha_dropout`` and
``feature_alpha_dropout``, with PyTorch's arguments and an explicit ``key``.

The mask is drawn with ``ember.random.bernoulli(key, 1 - p, ...)``; the same key gives the same mask, so
pass a fresh key each step (``ember.random.split`` / ``fold_in``). ``inplace`` is accepted for PyTorch's
signature and changes nothing: ember arrays are immutable, the result is always a new array.
"""

from __future__ import annotations

import math

import ember.numpy as enp
from ember import random
from ember.core.array import Array
from ember.errors import EmberError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike, channels_first_rank, floating_input
from ember.random import _keys

__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]

# SELU's negative saturation value, scale * alpha: the value alpha dropout sets dropped units to.
_ALPHA = 1.7580993408473766


def _check_p(op: str, p: float) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"{op}: dropout probability has to be between 0 and 1, but got p={p}")
    return p


def _checked_key(op: str, key) -> Array:
    if key is None:
        raise InvalidArgumentError(
            f"{op}: training-mode dropout with p > 0 needs a random key: pass key=ember.random.key(seed) (a fresh one "
            f"each step, from ember.random.split), or training=False / model.eval() for the deterministic identity")
    try:
        return _keys.check_key(op, key)
    except EmberError as error:
        message = str(error).replace(f"ember.random.{op}(", f"nn.functional.{op}(x, key=").replace(
            f"ember.random.{op}:", f"{op}: the key=")
        raise type(error)(message) from None


def _masked(op: str, x: Array, p: float, training: bool, key, mask_shape: tuple[int, ...], alpha: bool) -> Array:
    p = _check_p(op, p)
    if not training or p == 0.0 or x.size == 0:
        return x
    if p == 1.0:
        return x * 0  # PyTorch multiplies by zero (inf and nan become nan); a Python 0 keeps x's dtype and weakness
    key = _checked_key(op, key)
    keep = random.bernoulli(key, enp.asarray(1.0 - p, dtype=enp.float32), mask_shape)
    if not alpha:
        return enp.where(keep, x * (1.0 / (1.0 - p)), 0)
    # PyTorch's alpha dropout: a * (x if kept else -alpha) + alpha * a * p, keeping mean 0 and variance 1.
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1.0) * (1.0 - p))
    return enp.where(keep, x * a + _ALPHA * a * p, -_ALPHA * a + _ALPHA * a * p)


def dropout(input: ArrayLike, p: float = 0.5, training: bool = True, inplace: bool = False, *,
            key: Array | None = None) -> Array:  # fmt: skip
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``, as
    ``torch.nn.functional.dropout``.

    Args:
        input: a floating array.
        p: the probability of zeroing an element, in [0, 1].
        training: apply dropout (``False``: return the input unchanged).
        inplace: accepted for PyTorch's signature; no effect.
        key: the random key; required when ``training`` and ``0 < p < 1``.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> y = F.dropout(enp.ones(1000), 0.25, key=ember.random.key(0))
    >>> sorted({round(v, 4) for v in y.tolist()}), bool(abs(float((y == 0).mean()) - 0.25) < 0.05)
    ([0.0, 1.3333], True)
    >>> F.dropout(enp.ones(3), 0.25, training=False).tolist()
    [1.0, 1.0, 1.0]
    """
    x = floating_input("dropout", input)
    return _masked("dropout", x, p, training, key, x.shape, alpha=False)


def _feature_shape(op: str, x: Array, batched_ndim: int) -> tuple[Array, bool]:
    """``x`` with a batch dimension (added when it has none) and whether one was added; checks the rank."""
    if channels_first_rank(op, x, batched_ndim - 2, hint="; for element-wise dropout use nn.functional.dropout"):
        return x, False
    return x[None], True


def _feature_dropout(op: str, input: ArrayLike, p: float, training: bool, key, batched_ndim: int) -> Array:
    x, added = _feature_shape(op, floating_input(op, input), batched_ndim)
    out = _masked(op, x, p, training, key, x.shape[:2] + (1,) * (x.ndim - 2), alpha=False)
    return out[0] if added else out


def dropout1d(input: ArrayLike, p: float = 0.5, training: bool = True, inplace: bool = False, *,
              key: Array | None = None) -> Array:  # fmt: skip
    """Zero whole channels of an (N, C, L) or (C, L) input, as ``torch.nn.functional.dropout1d``.

    Args:
        input: shape (N, C, L) or (C, L).
        p, training, inplace, key: as ``dropout``.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> y = F.dropout1d(enp.ones((2, 8, 3)), 0.5, key=ember.random.key(0))
    >>> bool(((y == y[..., :1]).all()))  # each channel is kept or dropped whole
    True
    """
    return _feature_dropout("dropout1d", input, p, training, key, 3)


def dropout2d(input: ArrayLike, p: float = 0.5, training: bool = True, inplace: bool = False, *,
              key: Array | None = None) -> Array:  # fmt: skip
    """Zero whole channels of an (N, C, H, W) or (C, H, W) input, as ``torch.nn.functional.dropout2d``.

    A 3-D input is one sample (C, H, W), as PyTorch documents; PyTorch 2 still treats it as (N, C, L)
    with a deprecation warning (use ``dropout1d`` for that).

    Args:
        input: shape (N, C, H, W) or (C, H, W).
        p, training, inplace, key: as ``dropout``.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.dropout2d(enp.ones((1, 2, 2, 2)), 0.5, key=ember.random.key(0)).shape
    (1, 2, 2, 2)
    """
    return _feature_dropout("dropout2d", input, p, training, key, 4)


def dropout3d(input: ArrayLike, p: float = 0.5, training: bool = True, inplace: bool = False, *,
              key: Array | None = None) -> Array:  # fmt: skip
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input, as ``torch.nn.functional.dropout3d``.

    Args:
        input: shape (N, C, D, H, W) or (C, D, H, W).
        p, training, inplace, key: as ``dropout``.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.dropout3d(enp.ones((2, 1, 1, 2)), 0.5, training=False).shape
    (2, 1, 1, 2)
    """
    return _feature_dropout("dropout3d", input, p, training, key, 5)


def alpha_dropout(input: ArrayLike, p: float = 0.5, training: bool = False, inplace: bool = False, *,
                  key: Array | None = None) -> Array:  # fmt: skip
    """Dropout for SELU networks, as ``torch.nn.functional.alpha_dropout``: dropped elements are set to SELU's
    negative saturation value and an affine map keeps the mean and variance (of a standard normal input).

    Note PyTorch's default ``training=False`` here.

    Args:
        input: a floating array.
        p, training, inplace, key: as ``dropout``.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x = ember.random.normal(ember.random.key(1), (20000,))
    >>> y = F.alpha_dropout(x, 0.2, training=True, key=ember.random.key(0))
    >>> bool(abs(float(y.mean())) < 0.05), round(float(y.std()), 1)
    (True, 1.0)
    """
    x = floating_input("alpha_dropout", input)
    return _masked("alpha_dropout", x, p, training, key, x.shape, alpha=True)


def feature_alpha_dropout(input: ArrayLike, p: float = 0.5, training: bool = False, inplace: bool = False, *,
                          key: Array | None = None) -> Array:  # fmt: skip
    """Alpha dropout of whole channels of an (N, C, *) input, as ``torch.nn.functional.feature_alpha_dropout``.

    Args:
        input: shape (N, C, *), at least 2 dimensions.
        p, training, inplace, key: as ``dropout``.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> y = F.feature_alpha_dropout(enp.zeros((4, 3, 5)), 0.5, training=True, key=ember.random.key(0))
    >>> bool((y == y[..., :1]).all())
    True
    """
    x = floating_input("feature_alpha_dropout", input)
    if x.ndim < 2:
        raise ShapeError(f"feature_alpha_dropout: expected an input of shape (N, C, *) with at least 2 dimensions, "
                         f"got shape {x.shape} ({x.dtype})")  # fmt: skip
    return _masked("feature_alpha_dropout", x, p, training, key, x.shape[:2] + (1,) * (x.ndim - 2), alpha=True)
