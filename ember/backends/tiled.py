"""A binary ufunc of a large array and a small one broadcast against it (a convolution's bias), with the
small one tiled over the large one's innermost run of memory (NumPy).

NumPy's inner loop runs along the axes that every operand walks contiguously. A bias broadcast over a
channels-last activation (stride 0 along the spatial axes, 4 along the channels) stops that loop at the
channels: a (64, 8, 6, 6) NCHW view of NHWC memory adds in 2,304 loops of 8 elements. Laid out as a
tile of the activation's innermost contiguous axes (a row of 6 x 8 elements, or a whole image), the
bias walks along with it, and the loops are several times longer: 20 -> 9 us for that add. The same
ufunc computes each element, so the bits are NumPy's.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ember.backends.strided import inverse_permutation, memory_order

__all__ = ["tiled_binary"]

_MAX_TILE = 4096  # elements of the tile at most (it is written on every call)
_MIN_LOOPS = 2048  # NumPy's inner loops from which tiling pays (each costs ~8 ns; tiling ~3 us)


def tiled_binary(ufunc: np.ufunc, a, b):
    """``ufunc(a, b)`` where one operand is large and the other small and broadcast against it, with the
    small one tiled over the large one's innermost run of memory where that makes NumPy's inner loops
    several times longer (see the module docstring); the result is laid out as NumPy would.

    >>> x = np.arange(24.0).reshape(2, 3, 4).transpose(0, 2, 1)  # (2, 4, 3), channels innermost
    >>> np.array_equal(tiled_binary(np.add, x, np.ones(3)), x + 1)
    True
    """
    big_first = a.size >= b.size
    big, small = (a, b) if big_first else (b, a)
    plan = _plan(big.shape, big.strides, big.itemsize, small.shape)
    if plan is None:
        return ufunc(a, b)
    perm, inverse, source, k = plan
    inner = big.transpose(perm)
    tile = np.empty(inner.shape[k:], dtype=small.dtype)
    tile[...] = small.reshape(source).transpose(perm)[(0,) * k]
    out = ufunc(inner, tile) if big_first else ufunc(tile, inner)
    return out.transpose(inverse)


@functools.lru_cache(maxsize=256)
def _plan(shape, strides, itemsize, small_shape):
    """(axes in memory order, their inverse, the small operand's shape at the large one's rank, the
    number of outer axes) for a large operand of `shape` and byte `strides`, or None where tiling does
    not pay: the small operand varies outside the innermost run, or NumPy's loops are long already."""
    ndim = len(shape)
    if ndim < 2 or len(small_shape) > ndim or 0 in shape:
        return None
    source = (1,) * (ndim - len(small_shape)) + tuple(small_shape)
    if any(s not in (1, n) for s, n in zip(source, shape)):  # the result is not the large operand's shape
        return None
    perm = memory_order(strides)
    sizes = [shape[a] for a in perm]
    varies = [source[a] != 1 for a in perm]
    # the innermost run: the trailing axes in memory order that continue each other, up to _MAX_TILE
    k, step = ndim, itemsize
    while k and (sizes[k - 1] == 1 or strides[perm[k - 1]] == step) and step // itemsize * sizes[k - 1] <= _MAX_TILE:
        k -= 1
        step *= sizes[k]
    if k == ndim or any(varies[:k]):
        return None
    # NumPy's inner loop: the innermost axes along which the small operand varies, or does not, alike
    loop = ndim - 1
    while loop > k and varies[loop - 1] == varies[ndim - 1]:
        loop -= 1
    if math.prod(shape) // math.prod(sizes[loop:]) < _MIN_LOOPS or math.prod(sizes[k:]) < 4 * math.prod(sizes[loop:]):
        return None
    return perm, inverse_permutation(perm), source, k
