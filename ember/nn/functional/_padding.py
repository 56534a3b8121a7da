"""``pad``: PyTorch's padding of the last dimensions (constant, reflect, replicate, circular)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike

__all__ = ["pad"]

_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pairs(input: Array, pad: Sequence[int]) -> list[tuple[int, int]]:
    """PyTorch's pad tuple (last dimension first, (left, right) each) as NumPy's (low, high) per dimension."""
    try:
        pad = [operator.index(p) for p in pad]
    except TypeError:
        raise InvalidArgumentError(f"pad: pad must be a sequence of ints, got {pad!r}") from None
    if len(pad) % 2:
        raise InvalidArgumentError(f"pad: pad={tuple(pad)} has an odd length; give (left, right) for each padded "
                                   "dimension, last dimension first")
    if len(pad) // 2 > input.ndim:
        raise ShapeError(f"pad: pad={tuple(pad)} pads {len(pad) // 2} dimensions, but the input of shape {input.shape} "
                         f"({input.dtype}) has only {input.ndim}")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return pairs


def pad(input: ArrayLike, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Array:
    """Pad the last dimensions of ``input``, as ``torch.nn.functional.pad``.

    Args:
        input: the array.
        pad: ``(left, right)`` sizes for the last dimension, then ``(top, bottom)`` for the one before, and
            so on (PyTorch's order). Negative sizes crop (as PyTorch: before a circular pad, after the others).
        mode: ``"constant"`` (fill with ``value``), ``"reflect"`` (mirror, edge not repeated),
            ``"replicate"`` (repeat the edge) or ``"circular"`` (wrap around). The last three pad the last
            1, 2 or 3 dimensions of a batched or unbatched input (rank n + 1 or n + 2 for n padded dimensions).
        value: the fill value of ``"constant"`` mode (default 0).

    Returns:
        The padded array, of the input's dtype.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x = enp.array([[1.0, 2.0, 3.0]])
    >>> F.pad(x, (2, 1), mode="reflect").tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    >>> F.pad(x, (1, -1), value=9.0).tolist()
    [[9.0, 1.0, 2.0]]
    """
    x = enp.asarray(input)
    pairs = _pairs(x, pad)
    if mode not in _MODES:
        raise InvalidArgumentError(f"pad: unknown mode {mode!r}; use 'constant', 'reflect', 'replicate' or 'circular'")
    if mode == "constant":
        for size, (lo, hi) in zip(x.shape, pairs):
            if size + lo + hi < 0:
                raise ShapeError(f"pad: pad={tuple(pad)} crops the input of shape {x.shape} ({x.dtype}) to a negative "
                                 "size; crop at most the dimension's size")
        fill = enp.asarray(0 if value is None else value).astype(x.dtype)
        return lax.pad(x, fill, [(lo, hi, 0) for lo, hi in pairs])
    if value is not None and value != 0:
        raise InvalidArgumentError(f"pad: value={value!r} is only used by mode='constant', not mode={mode!r}")
    n = len(pad) // 2
    if n not in (1, 2, 3) or x.ndim not in (n + 1, n + 2):
        raise ShapeError(f"pad: mode={mode!r} pads the last 1, 2 or 3 dimensions of a (batch, channels, ...) or "
                         f"(channels, ...) input; pad={tuple(pad)} pads {n}, so the input must have rank {n + 1} or "
                         f"{n + 2}, got shape {x.shape} ({x.dtype})")
    # Negative sizes crop: for 'circular' first, so the wrap repeats the cropped input; for the others after
    # padding, so a reflection reaches into the cropped part (both as PyTorch).
    crop = [(min(lo, 0), min(hi, 0), 0) for lo, hi in pairs]
    if mode == "circular":
        x = lax.pad(x, enp.zeros((), x.dtype), crop)
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    for dim, (size, (lo, hi)) in enumerate(zip(x.shape, grow)):
        if (lo or hi) and mode == "reflect" and max(lo, hi) >= size:
            raise ShapeError(f"pad: mode='reflect' needs each pad size below the dimension's size; dimension {dim} "
                             f"of the input of shape {x.shape} ({x.dtype}) has size {size}, padded by ({lo}, {hi})")
        if (lo or hi) and mode == "circular" and max(lo, hi) > size:
            raise ShapeError(f"pad: mode='circular' needs each pad size at most the dimension's size; dimension {dim} "
                             f"of the input of shape {x.shape} ({x.dtype}) has size {size}, padded by ({lo}, {hi})")
        if (lo or hi) and mode == "replicate" and size == 0:
            raise ShapeError(f"pad: mode='replicate' cannot pad the empty dimension {dim} of the input of shape "
                             f"{x.shape} ({x.dtype})")
    x = enp.pad(x, grow, mode=_MODES[mode])
    return x if mode == "circular" else lax.pad(x, enp.zeros((), x.dtype), crop)
