"""Strided (window) views and axis moves of NumPy arrays without the cost of NumPy's Python wrappers,
the order of an array's axes in memory, and the number of positions a window takes along an axis.

``np.lib.stride_tricks.as_strided`` (2.3 us a call) and ``np.moveaxis`` (2.2 us) are Python functions
around a constructor and a transpose (0.3 and 0.1 us). A convolution kernel makes a few of each per
call, and a small network's jitted program a dozen convolutions: their wrappers cost more than some of
the arithmetic.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["dense_order", "inverse_permutation", "memory_order", "move_axis", "out_size", "strided_view"]


def strided_view(x, shape, strides):
    """A read-only view of NumPy array `x` with `shape` and byte `strides` from its first element, as
    ``np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)``. Over a C-contiguous `x`
    (and non-negative strides) it is built directly, and NumPy checks that it stays inside `x`.

    >>> strided_view(np.arange(5.0), (3, 2), (8, 8)).tolist()
    [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]
    """
    if x.flags.c_contiguous and x.size and min(strides, default=0) >= 0:
        view = np.ndarray(shape, x.dtype, x, 0, strides)
        view.flags.writeable = False
        return view
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def move_axis(x, source: int, destination: int):
    """``np.moveaxis(x, source, destination)`` for one axis, as a transpose (NumPy or CuPy arrays).

    >>> move_axis(np.zeros((2, 3, 4)), -1, 0).shape
    (4, 2, 3)
    """
    perm = list(range(x.ndim))
    perm.insert(destination % x.ndim, perm.pop(source % x.ndim))
    return x.transpose(perm)


def out_size(padded: int, window: int, stride: int) -> int:
    """How many positions a window of `window` elements takes along an axis of `padded` elements, moving
    `stride` at a time (0 when it does not fit).

    >>> out_size(8, 3, 2)
    3
    """
    return (padded - window) // stride + 1 if padded >= window else 0


def memory_order(strides) -> tuple[int, ...]:
    """The axes from the largest stride to the smallest (equal strides in axis order): the transpose
    that lays a transposed array's axes out as its memory runs.

    >>> memory_order(np.zeros((2, 3, 4)).transpose(0, 2, 1).strides)
    (0, 2, 1)
    """
    return tuple(sorted(range(len(strides)), key=strides.__getitem__, reverse=True))


@functools.lru_cache(maxsize=1024)
def dense_order(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, ...] | None:
    """`memory_order(strides)` where (shape, byte strides) lay an array out as a transposed C-contiguous
    one (every element once, no gaps; NumPy's C-contiguity in that order); else None. Kept per layout.

    >>> dense_order((2, 4, 3), (48, 4, 16), 4), dense_order((2, 3), (48, 8), 4)
    ((0, 2, 1), None)
    """
    perm = memory_order(strides)
    if 0 in shape:
        return perm
    step = itemsize
    for a in reversed(perm):
        if shape[a] > 1 and strides[a] != step:
            return None
        step *= shape[a]
    return perm


@functools.lru_cache(maxsize=256)
def inverse_permutation(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The transpose that undoes `perm`.

    >>> inverse_permutation((2, 0, 1))
    (1, 2, 0)
    """
    inverse = [0] * len(perm)
    for i, a in enumerate(perm):
        inverse[a] = i
    return tuple(inverse)
