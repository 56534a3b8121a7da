"""Pooling and resampling: max/avg/Lp/adaptive pools, ``interpolate`` and the pixel shuffles, as PyTorch.

The window sizes, output shapes and average divisors are PyTorch's (``ceil_mode`` windows that start
in the input or the left padding, ``count_include_pad``, ``divisor_override``). Max pools reduce with
``lax.reduce_window``, whose gradient goes to each window's first maximum, as PyTorch's; the index
arrays of ``return_indices`` are PyTorch's flat positions within each (N, C) plane. Window tables
(divisors, adaptive windows, interpolation weights) depend only on shapes, so they are built once in
NumPy and enter the computation as constants.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Sequence

import numpy as np

import ember.numpy as enp
from ember import lax
from ember.transforms.custom import custom_jvp
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import SPATIAL, ArrayLike, IntOrTuple, channels_first_rank, floating_input, ntuple
from ember.numpy._core import full_for

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "interpolate", "lp_pool1d", "lp_pool2d",
    "lp_pool3d", "max_pool1d", "max_pool2d", "max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "pixel_shuffle", "pixel_unshuffle", "upsample",
]  # fmt: skip

# --- argument checks -----------------------------------------------------------------------------------


def _batched(op: str, input: ArrayLike, n: int) -> tuple[Array, bool]:
    """The input as (N, C, *spatial), and whether it came without the batch dimension."""
    x = enp.asarray(input)
    unbatched = not channels_first_rank(op, x, n)
    x = floating_input(op, x)
    if unbatched:
        x = x[None]
    if any(d == 0 for d in x.shape[1:]):
        raise ShapeError(f"{op}: expected non-zero sizes except for the batch dimension, got shape "
                         f"{x.shape[1:] if unbatched else x.shape} ({x.dtype})")  # fmt: skip
    return x, unbatched


def _pool_size(op: str, size: int, k: int, s: int, p: int, d: int, ceil_mode: bool, shape) -> int:
    """PyTorch's pooling_output_shape: in ceil mode the last window must start inside the input or left padding."""
    if k <= 0 or s <= 0 or d <= 0:
        raise InvalidArgumentError(
            f"{op}: kernel_size, stride and dilation must be positive, got kernel_size={k}, stride={s}, dilation={d}")
    if p < 0 or p > k // 2:
        raise ShapeError(f"{op}: padding should be at most half of kernel size, got padding={p} and kernel_size={k}")
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    if out < 1:
        raise ShapeError(
            f"{op}: the window (kernel_size={k}, dilation={d}) is larger than the padded input (size {size} + "
            f"2 * padding {p}) of shape {tuple(shape)}; use a smaller kernel_size or more padding")
    return out


def _window_config(op, x, n, kernel_size, stride, padding, dilation, ceil_mode):
    k = ntuple(op, "kernel_size", kernel_size, n)
    no_stride = stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0)  # torch passes [] for None
    s = k if no_stride else ntuple(op, "stride", stride, n)
    p = ntuple(op, "padding", padding, n)
    d = ntuple(op, "dilation", dilation, n)
    sizes = x.shape[2:]
    out = tuple(_pool_size(op, sizes[i], k[i], s[i], p[i], d[i], ceil_mode, x.shape) for i in range(n))
    # High padding so that exactly `out` windows fit (more than p in ceil mode, less when the tail is dropped).
    pads = tuple((p[i], (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - sizes[i] - p[i]) for i in range(n))
    return k, s, p, d, out, pads


def _unbatch(y: Array, unbatched: bool) -> Array:
    return y[0] if unbatched else y


def _int_dtype():
    return enp.asarray(0).dtype


# --- max pooling -------------------------------------------------------------------------------------


def _max_pool(op: str, n: int, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(op, input, n)
    k, s, p, d, out, pads = _window_config(op, x, n, kernel_size, stride, padding, dilation, ceil_mode)
    neg_inf = enp.asarray(-np.inf, dtype=x.dtype)
    values = lax.reduce_window(x, neg_inf, lax.max, (1, 1, *k), (1, 1, *s), ((0, 0), (0, 0), *pads),
                               None, (1, 1, *d))  # fmt: skip
    if not return_indices:
        return _unbatch(values, unbatched)
    return _unbatch(values, unbatched), _unbatch(_max_indices(x, values, k, s, d, out, pads), unbatched)


def _max_indices(x: Array, values: Array, k, s, d, out, pads) -> Array:
    """PyTorch's flat index (within each (N, C) plane) of each window's first maximum (its last NaN, if any)."""
    n = len(k)
    sizes = x.shape[2:]
    grow = [(0, 0), (0, 0)] + [(lo, max(hi, 0)) for lo, hi in pads]
    padded = enp.pad(x, grow, constant_values=-np.inf)
    patches, flat, valid = [], [], []
    for offset in itertools.product(*(range(kk) for kk in k)):
        starts = [offset[i] * d[i] for i in range(n)]
        limits = [starts[i] + (out[i] - 1) * s[i] + 1 for i in range(n)]
        patches.append(lax.slice(padded, (0, 0, *starts), (*x.shape[:2], *limits), (1, 1, *s)))
        coords = [np.arange(out[i]) * s[i] + starts[i] - pads[i][0] for i in range(n)]
        grids = np.meshgrid(*coords, indexing="ij")
        valid.append(np.all([(g >= 0) & (g < sizes[i]) for i, g in enumerate(grids)], axis=0))
        flat.append(np.ravel_multi_index([np.clip(g, 0, sizes[i] - 1) for i, g in enumerate(grids)], sizes))
    patches = enp.stack(patches)
    valid, flat = np.stack(valid), np.stack(flat)
    big = int(np.prod(sizes))
    first = enp.min(enp.where((patches == values[None]) & valid[:, None, None], flat[:, None, None], big), axis=0)
    last_nan = enp.max(enp.where(enp.isnan(patches) & valid[:, None, None], flat[:, None, None], -1), axis=0)
    return enp.where(enp.isnan(values), last_nan, first).astype(_int_dtype())


def max_pool1d(input: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
               dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """1-D max pooling over (N, C, L) or (C, L), as ``torch.nn.functional.max_pool1d``.

    Args:
        input: (N, C, L) or (C, L).
        kernel_size: the window; stride: its step (default ``kernel_size``); padding: implicit -inf on both
            sides (at most half the kernel); dilation: the spacing of the window's elements.
        ceil_mode: round the output length up (the last window must start inside the input or left padding).
        return_indices: also return each maximum's position in the input's last dimension.

    Returns:
        The pooled array (and the indices, with ``return_indices``).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.max_pool1d(enp.array([[1.0, 3.0, 2.0, 5.0, 4.0]]), 2, ceil_mode=True).tolist()
    [[3.0, 5.0, 4.0]]
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
               dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """2-D max pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.functional.max_pool2d``.

    Args as ``max_pool1d``, each an int or a pair; indices are flat positions ``h * W + w`` in each plane.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> out, idx = F.max_pool2d(enp.arange(16.0).reshape(1, 4, 4), 2, return_indices=True)
    >>> out.tolist(), idx.tolist()
    ([[[5.0, 7.0], [13.0, 15.0]]], [[[5, 7], [13, 15]]])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
               dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.functional.max_pool3d``.

    Args as ``max_pool1d``, each an int or a triple; indices are flat positions in each (D, H, W) volume.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.max_pool3d(enp.ones((2, 1, 4, 4, 4)), 2, stride=1).shape
    (2, 1, 3, 3, 3)
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _max_unpool(op: str, n: int, input, indices, kernel_size, stride, padding, output_size):
    x = enp.asarray(input)
    index = enp.asarray(indices)
    if x.ndim not in (n + 1, n + 2) or index.shape != x.shape:
        raise ShapeError(
            f"{op}: expected a {n + 1}-D (C, {SPATIAL[n]}) or {n + 2}-D (N, C, {SPATIAL[n]}) input and indices of "
            f"its shape (max_pool{n}d's with return_indices=True), got {x.shape} ({x.dtype}) and {index.shape} "
            f"({index.dtype})")
    if not enp.issubdtype(index.dtype, enp.integer):
        raise DTypeError(f"{op}: indices must be integers (max_pool{n}d's return_indices), got {index.dtype}")
    unbatched = x.ndim == n + 1
    if unbatched:
        x, index = x[None], index[None]
    k = ntuple(op, "kernel_size", kernel_size, n)
    s = k if stride is None else ntuple(op, "stride", stride, n)
    p = ntuple(op, "padding", padding, n)
    default = [(x.shape[2 + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(n)]
    if output_size is None:
        out = default
    else:
        out = list(output_size)[-n:] if len(output_size) == n + 2 else list(output_size)
        if len(out) != n:
            raise InvalidArgumentError(f"{op}: output_size={output_size!r} must have {n} or {n + 2} entries")
        for i in range(n):
            if not default[i] - s[i] < out[i] < default[i] + s[i]:
                raise ShapeError(f"{op}: invalid output_size {tuple(output_size)} (dimension {i} must be between "
                                 f"{default[i] - s[i]} and {default[i] + s[i]}, exclusive)")  # fmt: skip
    batch, channels = x.shape[:2]
    size = math.prod(x.shape[2:])
    if x.size == 0:  # nothing to place (and ember's gather cannot yet transpose an empty scatter-add)
        y = full_for(op, (batch, channels, math.prod(out)), 0, x.dtype, x, index)
    else:
        y = _unpool(x.reshape(batch, channels, size), index.reshape(batch, channels, size), math.prod(out))
    return _unbatch(y.reshape(batch, channels, *out), unbatched)


def _place(x: Array, index: Array, size: int, how: str) -> Array:
    """(B, C, M) values written ('set') or added ('add') at (B, C, M) positions of a (B, C, size) array of zeros."""
    batch, channels = x.shape[:2]
    rows = np.arange(batch)[:, None, None], np.arange(channels)[None, :, None]
    target = enp.zeros((batch, channels, size), dtype=x.dtype).at[(*rows, index)]
    return target.set(x) if how == "set" else target.add(x)


@functools.partial(custom_jvp, nondiff_argnums=(2,))
def _unpool(x: Array, index: Array, size: int) -> Array:
    return _place(x, index, size, "set")


@_unpool.defjvp
def _unpool_jvp(size, primals, tangents):
    # PyTorch's gradient is a gather (every input gets the cotangent at its index, repeated indices too):
    # the transpose of adding the tangents at the indices.
    (x, index), (t, _) = primals, tangents
    return _unpool(x, index, size), _place(t, index, size, "add")


def max_unpool1d(input: ArrayLike, indices: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, output_size: Sequence[int] | None = None) -> Array:  # fmt: skip
    """The inverse of ``max_pool1d``: each value at its index, zeros elsewhere, as ``torch.nn.functional.max_unpool1d``.

    Args:
        input, indices: ``max_pool1d``'s outputs with ``return_indices=True``.
        kernel_size, stride, padding: the pool's; output_size: the length to restore (default
            ``(L - 1) * stride + kernel_size - 2 * padding``), for pools that dropped a tail.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> out, idx = F.max_pool1d(enp.array([[1.0, 3.0, 2.0, 0.0, 5.0]]), 2, return_indices=True)
    >>> F.max_unpool1d(out, idx, 2, output_size=[5]).tolist()
    [[0.0, 3.0, 2.0, 0.0, 0.0]]
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: ArrayLike, indices: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, output_size: Sequence[int] | None = None) -> Array:  # fmt: skip
    """The inverse of ``max_pool2d``, as ``torch.nn.functional.max_unpool2d`` (args as ``max_unpool1d``).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> out, idx = F.max_pool2d(enp.arange(16.0).reshape(1, 4, 4), 2, return_indices=True)
    >>> F.max_unpool2d(out, idx, 2)[0, 1].tolist()
    [0.0, 5.0, 0.0, 7.0]
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: ArrayLike, indices: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, output_size: Sequence[int] | None = None) -> Array:  # fmt: skip
    """The inverse of ``max_pool3d``, as ``torch.nn.functional.max_unpool3d`` (args as ``max_unpool1d``).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> out, idx = F.max_pool3d(enp.ones((1, 1, 4, 4, 4)), 2, return_indices=True)
    >>> F.max_unpool3d(out, idx, 2).shape
    (1, 1, 4, 4, 4)
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# --- average pooling ---------------------------------------------------------------------------------


def _divisors(sizes, k, s, p, out, count_include_pad: bool) -> np.ndarray:
    """PyTorch's divisor of every window: its size clipped to the padded input, or to the input alone."""
    per_dim = []
    for size, kk, ss, pp, oo in zip(sizes, k, s, p, out):
        start = np.arange(oo) * ss - pp
        end = np.minimum(start + kk, size + pp)
        pool = end - start
        count = np.minimum(end, size) - np.maximum(start, 0)
        per_dim.append(pool if count_include_pad else count)
    return np.maximum(np.prod(np.meshgrid(*per_dim, indexing="ij"), axis=0), 1)


def _avg_pool(op, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unbatched = _batched(op, input, n)
    k, s, p, _, out, pads = _window_config(op, x, n, kernel_size, stride, padding, 1, ceil_mode)
    sums = lax.reduce_window(x, enp.asarray(0, dtype=x.dtype), lax.add, (1, 1, *k), (1, 1, *s),
                             ((0, 0), (0, 0), *pads))  # fmt: skip
    if divisor_override is not None:
        if operator.index(divisor_override) == 0:
            raise InvalidArgumentError(f"{op}: divisor_override must be non-zero, got {divisor_override}")
        return _unbatch(sums / enp.asarray(divisor_override, dtype=x.dtype), unbatched)
    divisor = _divisors(x.shape[2:], k, s, p, out, count_include_pad)
    return _unbatch(sums / enp.asarray(divisor, dtype=x.dtype), unbatched)


def avg_pool1d(input: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Array:  # fmt: skip
    """1-D average pooling over (N, C, L) or (C, L), as ``torch.nn.functional.avg_pool1d``.

    Args:
        input: (N, C, L) or (C, L).
        kernel_size, stride (default ``kernel_size``), padding (zeros, at most half the kernel).
        ceil_mode: round the output length up (the last window must start inside the input or left padding).
        count_include_pad: divide by the window's size within the padded input (True) or within the input.

    Returns:
        The averages.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.avg_pool1d(enp.array([[1.0, 2.0, 3.0, 4.0]]), 2, padding=1).tolist()
    [[0.5, 2.5, 2.0]]
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Array:  # fmt: skip
    """2-D average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.functional.avg_pool2d``.

    Args as ``avg_pool1d``; ``divisor_override`` divides every window's sum by that number instead.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.avg_pool2d(enp.ones((1, 3, 3)), 2, padding=1, count_include_pad=False).tolist()
    [[[1.0, 1.0], [1.0, 1.0]]]
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input: ArrayLike, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Array:  # fmt: skip
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.functional.avg_pool3d``.

    Args as ``avg_pool2d``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.avg_pool3d(enp.ones((1, 1, 2, 2, 2)), 2, divisor_override=1).tolist()
    [[[[[8.0]]]]]
    """
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# --- Lp pooling --------------------------------------------------------------------------------------


def _lp_pool(op, n, input, norm_type, kernel_size, stride, ceil_mode):
    x = enp.asarray(input)
    if not enp.issubdtype(x.dtype, enp.floating):  # checked before x ** p, which would promote it
        raise DTypeError(f"{op}: expected a floating input, got {x.dtype}; convert it with x.astype(float)")
    norm_type = float(norm_type)
    if norm_type == math.inf:
        return _max_pool(op, n, enp.abs(x), kernel_size, stride, 0, 1, ceil_mode, False)
    if norm_type == -math.inf:
        return -_max_pool(op, n, -enp.abs(x), kernel_size, stride, 0, 1, ceil_mode, False)
    k = ntuple(op, "kernel_size", kernel_size, n)
    mean = _avg_pool(op, n, x ** norm_type, k, stride, 0, ceil_mode, True, None)
    total = enp.sign(mean) * enp.abs(mean) * math.prod(k)
    # A zero sum has an infinite derivative under the root; PyTorch sets that gradient to zero.
    zero = total == 0
    return enp.where(zero, 0, enp.where(zero, 1, total) ** (1.0 / norm_type))


def lp_pool1d(input: ArrayLike, norm_type: float, kernel_size: int, stride: IntOrTuple | None = None,
              ceil_mode: bool = False) -> Array:  # fmt: skip
    """1-D power-average pooling ``(sum x**p)**(1/p)`` over each window, as ``torch.nn.functional.lp_pool1d``.

    Args:
        input: (N, C, L) or (C, L). norm_type: p (``inf`` is the max of ``|x|``).
        kernel_size, stride (default ``kernel_size``), ceil_mode: as ``avg_pool1d`` (no padding).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.lp_pool1d(enp.array([[3.0, 4.0]]), 2, 2).tolist()
    [[5.0]]
    """
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: ArrayLike, norm_type: float, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
              ceil_mode: bool = False) -> Array:  # fmt: skip
    """2-D power-average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.functional.lp_pool2d``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.lp_pool2d(enp.ones((1, 2, 2)), 1, 2).tolist()
    [[[4.0]]]
    """
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: ArrayLike, norm_type: float, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
              ceil_mode: bool = False) -> Array:  # fmt: skip
    """3-D power-average pooling over (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.functional.lp_pool3d``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.lp_pool3d(enp.ones((1, 2, 2, 2)), 2, 2).tolist()
    [[[[2.8284270763397217]]]]
    """
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


# --- adaptive pooling ----------------------------------------------------------------------------------


def _adaptive_sizes(op: str, output_size, sizes) -> tuple[int, ...]:
    n = len(sizes)
    if isinstance(output_size, (list, tuple)):
        if len(output_size) == 1 and n > 1:
            output_size = tuple(output_size) * n
        if len(output_size) != n:
            raise InvalidArgumentError(f"{op}: output_size={output_size!r} must be an int or {n} ints (or None)")
        out = tuple(size if o is None else operator.index(o) for o, size in zip(output_size, sizes))
    else:
        out = (operator.index(output_size),) * n
    if any(o < 0 for o in out):
        raise InvalidArgumentError(f"{op}: output_size must be non-negative, got {output_size!r}")
    return out


def _windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows: [floor(i * in / out), ceil((i + 1) * in / out))."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_avg(op, n, input, output_size):
    x, unbatched = _batched(op, input, n)
    out = _adaptive_sizes(op, output_size, x.shape[2:])
    for axis, (size, o) in enumerate(zip(x.shape[2:], out)):
        start, end = _windows(size, o)
        cols = np.arange(size)
        weights = ((cols >= start[:, None]) & (cols < end[:, None])) / (end - start)[:, None]
        moved = enp.moveaxis(x, axis + 2, -1)
        x = enp.moveaxis(enp.matmul(moved, enp.asarray(weights.T, dtype=x.dtype)), -1, axis + 2)
    return _unbatch(x, unbatched)


def _adaptive_max(op, n, input, output_size, return_indices):
    x, unbatched = _batched(op, input, n)
    sizes = x.shape[2:]
    out = _adaptive_sizes(op, output_size, sizes)
    # Each window as a fixed number of positions, the short ones repeating their last element: a repeat
    # comes after its original, so the first maximum is always an original position.
    tables = []
    for axis, (size, o) in enumerate(zip(sizes, out)):
        start, end = _windows(size, o)
        length = int((end - start).max()) if o else 1
        table = np.minimum(start[:, None] + np.arange(length), end[:, None] - 1)
        x = enp.take(x, np.clip(table, 0, size - 1).reshape(-1), axis=axis + 2)
        tables.append(table)
    lengths = [t.shape[1] for t in tables]
    x = x.reshape(*x.shape[:2], *itertools.chain(*zip(out, lengths)))
    x = enp.transpose(x, (0, 1, *range(2, 2 + 2 * n, 2), *range(3, 3 + 2 * n, 2)))
    x = x.reshape(*x.shape[:2 + n], math.prod(lengths))
    choice = enp.argmax(x, axis=-1, keepdims=True)
    values = enp.take_along_axis(x, choice, axis=-1)[..., 0]
    if not return_indices:
        return _unbatch(values, unbatched)
    # flat[o..., l...]: the input position (within a plane) of window o's element l.
    grids = np.meshgrid(*[np.arange(o) for o in out], *[np.arange(length) for length in lengths], indexing="ij")
    coords = [tables[i][grids[i], grids[n + i]] for i in range(n)]
    flat = np.ravel_multi_index(coords, sizes).reshape(*out, -1) if all(out) else np.zeros((*out, 1), np.int64)
    index = enp.take_along_axis(enp.broadcast_to(enp.asarray(flat, dtype=_int_dtype()), (*x.shape[:2], *flat.shape)),
                                choice, axis=-1)[..., 0]  # fmt: skip
    return _unbatch(values, unbatched), _unbatch(index, unbatched)


def adaptive_avg_pool1d(input: ArrayLike, output_size: int | Sequence[int]) -> Array:
    """Average pooling to a given length, as ``torch.nn.functional.adaptive_avg_pool1d``.

    Output position ``i`` averages input positions ``floor(i * L / out)`` up to ``ceil((i + 1) * L / out)``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.adaptive_avg_pool1d(enp.array([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2).tolist()
    [[2.0, 4.0]]
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: ArrayLike, output_size: int | Sequence[int | None]) -> Array:
    """Average pooling to a given (H, W), as ``torch.nn.functional.adaptive_avg_pool2d`` (None keeps a size).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.adaptive_avg_pool2d(enp.ones((2, 3, 7, 5)), (3, None)).shape
    (2, 3, 3, 5)
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: ArrayLike, output_size: int | Sequence[int | None]) -> Array:
    """Average pooling to a given (D, H, W), as ``torch.nn.functional.adaptive_avg_pool3d``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.adaptive_avg_pool3d(enp.ones((1, 4, 5, 6)), 2).shape
    (1, 2, 2, 2)
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool1d(input: ArrayLike, output_size: int | Sequence[int],
                        return_indices: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """Max pooling to a given length, as ``torch.nn.functional.adaptive_max_pool1d`` (windows as adaptive_avg_pool1d).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> out, idx = F.adaptive_max_pool1d(enp.array([[1.0, 5.0, 3.0, 4.0, 2.0]]), 2, return_indices=True)
    >>> out.tolist(), idx.tolist()
    ([[5.0, 4.0]], [[1, 3]])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: ArrayLike, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """Max pooling to a given (H, W), as ``torch.nn.functional.adaptive_max_pool2d`` (flat indices ``h * W + w``).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.adaptive_max_pool2d(enp.arange(9.0).reshape(1, 3, 3), 2).tolist()
    [[[4.0, 5.0], [7.0, 8.0]]]
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: ArrayLike, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """Max pooling to a given (D, H, W), as ``torch.nn.functional.adaptive_max_pool3d``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.adaptive_max_pool3d(enp.ones((1, 1, 3, 4, 5)), (2, None, 1)).shape
    (1, 1, 2, 4, 1)
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


# --- interpolation -----------------------------------------------------------------------------------

_MODES = {"nearest": None, "nearest-exact": None, "linear": 1, "bilinear": 2, "trilinear": 3}


def _scale_of(size: int, out: int, scale: float | None, dtype) -> np.floating:
    """PyTorch's compute_scales_value: 1 / scale_factor when one was given, else in / out (in ``dtype``)."""
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(size) / dtype(out)


def _nearest_index(size: int, out: int, scale, exact: bool) -> np.ndarray:
    if out == size and not exact:
        return np.arange(out)
    if out == 2 * size and not exact:
        return np.arange(out) >> 1
    f = np.float32
    offset = f(0.5) if exact else f(0.0)
    src = np.floor((np.arange(out, dtype=f) + offset) * _scale_of(size, out, scale, f))
    return np.minimum(src.astype(np.int64), size - 1)


def _linear_weights(size: int, out: int, scale, align_corners: bool, dtype) -> np.ndarray:
    """The (out, size) matrix of PyTorch's linear interpolation weights (area_pixel_compute_source_index)."""
    f = np.float64 if dtype == np.float64 else np.float32
    i = np.arange(out, dtype=f)
    if align_corners:
        step = f(size - 1) / f(out - 1) if out > 1 else f(0)
        src = i * step
    else:
        src = np.maximum(_scale_of(size, out, scale, f) * (i + f(0.5)) - f(0.5), f(0))
    lo = src.astype(np.int64)
    lam = np.clip(src - lo, 0, 1)
    hi = lo + (lo < size - 1)
    weights = np.zeros((out, size), dtype=np.float64)
    np.add.at(weights, (np.arange(out), lo), 1 - lam)
    np.add.at(weights, (np.arange(out), hi), lam)
    return weights


def interpolate(input: ArrayLike, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Array:  # fmt: skip
    """Resample (N, C, *spatial) to a size or by a scale factor, as ``torch.nn.functional.interpolate``.

    Args:
        input: (N, C, L), (N, C, H, W) or (N, C, D, H, W).
        size: the output's spatial size (an int or one per dimension); or
        scale_factor: the output size is ``floor(in * scale_factor)``, and the source positions use
            ``1 / scale_factor`` unless ``recompute_scale_factor`` (then ``in / out``).
        mode: ``'nearest'``, ``'nearest-exact'`` (any dtype), ``'linear'`` (3-D), ``'bilinear'`` (4-D),
            ``'trilinear'`` (5-D) (floating inputs).
        align_corners: for the linear modes: map the corner pixels' centres onto each other (default False).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.interpolate(enp.array([[[1.0, 2.0]]]), scale_factor=2, mode="linear").tolist()
    [[[1.0, 1.25, 1.75, 2.0]]]
    """
    op = "interpolate"
    x = enp.asarray(input)
    if mode not in _MODES:
        raise InvalidArgumentError(f"{op}: mode={mode!r} is not supported; use one of {sorted(_MODES)}")
    if antialias:
        raise InvalidArgumentError(f"{op}: antialias=True is not supported")
    n = x.ndim - 2
    if n not in (1, 2, 3) or (_MODES[mode] is not None and _MODES[mode] != n):
        want = f"a {_MODES[mode] + 2}-D" if _MODES[mode] else "a 3-D, 4-D or 5-D"
        raise ShapeError(f"{op}: mode={mode!r} expects {want} (N, C, *spatial) input, got shape {x.shape} ({x.dtype})")
    if _MODES[mode] is not None and not enp.issubdtype(x.dtype, enp.floating):
        raise DTypeError(f"{op}: mode={mode!r} interpolates floating inputs, got {x.dtype}; convert it with "
                         f"x.astype(float) (mode='nearest' takes any dtype)")
    if _MODES[mode] is None and align_corners is not None:
        raise InvalidArgumentError(
            f"{op}: align_corners is only for the linear modes, not mode={mode!r}; leave it None")
    if (size is None) == (scale_factor is None):
        raise InvalidArgumentError(f"{op}: give exactly one of size and scale_factor")
    sizes = x.shape[2:]
    if size is not None:
        out = ntuple(op, "size", size, n)
        scales = (None,) * n
    else:
        many = isinstance(scale_factor, (list, tuple))
        scales = tuple(float(v) for v in scale_factor) if many else (float(scale_factor),) * n
        if len(scales) != n:
            raise InvalidArgumentError(f"{op}: scale_factor={scale_factor!r} must be a number or {n} numbers")
        out = tuple(math.floor(float(s) * f) for s, f in zip(sizes, scales))
        if recompute_scale_factor:
            scales = (None,) * n
    if any(o <= 0 for o in out) or any(s == 0 for s in sizes):
        raise ShapeError(f"{op}: input of shape {x.shape} and output size {out} must be non-empty")
    for axis in range(n):
        if _MODES[mode] is None:
            index = _nearest_index(sizes[axis], out[axis], scales[axis], mode == "nearest-exact")
            x = enp.take(x, index, axis=axis + 2)
        else:
            w = _linear_weights(sizes[axis], out[axis], scales[axis], bool(align_corners), np.dtype(x.dtype))
            moved = enp.moveaxis(x, axis + 2, -1)
            x = enp.moveaxis(enp.matmul(moved, enp.asarray(w.T, dtype=x.dtype)), -1, axis + 2)
    return x


def upsample(input: ArrayLike, size: int | Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Array:  # fmt: skip
    """``interpolate`` under its older name, as ``torch.nn.functional.upsample``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.upsample(enp.array([[[1.0, 2.0]]]), size=4).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


# --- pixel shuffles ----------------------------------------------------------------------------------


def pixel_shuffle(input: ArrayLike, upscale_factor: int) -> Array:
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r), as ``torch.nn.functional.pixel_shuffle``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.pixel_shuffle(enp.arange(4.0).reshape(4, 1, 1), 2).tolist()
    [[[0.0, 1.0], [2.0, 3.0]]]
    """
    x = enp.asarray(input)
    r = operator.index(upscale_factor)
    if x.ndim < 3 or r <= 0 or x.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: expected an input of shape (*, C * {r}**2, H, W) with upscale_factor > 0, "
                         f"got shape {x.shape} ({x.dtype})")
    *batch, c, h, w = x.shape
    y = x.reshape(*batch, c // (r * r), r, r, h, w)
    b = len(batch)
    y = enp.transpose(y, (*range(b), b, b + 3, b + 1, b + 4, b + 2))
    return y.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: ArrayLike, downscale_factor: int) -> Array:
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W), as ``torch.nn.functional.pixel_unshuffle``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.pixel_unshuffle(enp.arange(4.0).reshape(1, 2, 2), 2).reshape(-1).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    x = enp.asarray(input)
    r = operator.index(downscale_factor)
    if x.ndim < 3 or r <= 0 or x.shape[-2] % r or x.shape[-1] % r:
        raise ShapeError(f"pixel_unshuffle: expected an input of shape (*, C, H * {r}, W * {r}) with "
                         f"downscale_factor > 0, got shape {x.shape} ({x.dtype})")
    *batch, c, h, w = x.shape
    y = x.reshape(*batch, c, h // r, r, w // r, r)
    b = len(batch)
    y = enp.transpose(y, (*range(b), b, b + 2, b + 4, b + 1, b + 3))
    return y.reshape(*batch, c * r * r, h // r, w // r)
