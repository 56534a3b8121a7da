"""Kernels of the random primitives, written once against an array module `xp`.

Threefry-2x32 with 20 rounds, as in Random123's ``threefry2x32_20`` (the same
schedule JAX uses): uint32 words, additions wrapping mod 2**32, rotations by
the published constants, and a key injection after every 4 rounds with the
parity word ``key1 ^ key2 ^ 0x1BD11BDA``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

_U32 = np.uint32
_PARITY = _U32(0x1BD11BDA)  # Threefish's key-schedule constant C240, truncated to 32 bits
# Rotation amounts of Threefry-2x32 (Random123's R_32x2_i_j), used 4 at a time, alternating.
_ROTATIONS = (tuple(map(_U32, (13, 15, 26, 6))), tuple(map(_U32, (17, 29, 16, 24))))
_WIDTH = _U32(32)


def make_random_kernels(xp: ModuleType) -> dict[str, Any]:
    """``{primitive name: kernel}`` for the random primitives on array module `xp`."""
    return {"threefry2x32": lambda k1, k2, x1, x2: threefry2x32(xp, k1, k2, x1, x2)}


def threefry2x32(xp: ModuleType, key1, key2, x1, x2):
    """Threefry-2x32-20 of the counters (x1, x2) under the keys (key1, key2), broadcasting all four."""
    shape = xp.broadcast_shapes(key1.shape, key2.shape, x1.shape, x2.shape)
    # Work on fresh 1-d buffers: updates go in place, and 1-d ufunc results stay arrays
    # (0-d arithmetic would fall to NumPy scalars, which warn when they wrap).
    x = [_flat_copy(xp, x1, shape), _flat_copy(xp, x2, shape)]
    k1, k2 = _flat_key(xp, key1, shape), _flat_key(xp, key2, shape)
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    scratch = xp.empty_like(x[0])

    x[0] += ks[0]
    x[1] += ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            _round(xp, x, r, scratch)
        # Key injection i + 1: the words rotate through ks, and the injection count goes into x[1].
        x[0] += ks[(i + 1) % 3]
        x[1] += ks[(i + 2) % 3] + _U32(i + 1)
    return x[0].reshape(shape), x[1].reshape(shape)


def _round(xp: ModuleType, x: list, r, scratch) -> None:
    # x0 += x1; x1 = rotl(x1, r) ^ x0
    x0, x1 = x
    x0 += x1
    xp.left_shift(x1, r, out=scratch)
    xp.right_shift(x1, _WIDTH - r, out=x1)
    x1 |= scratch
    x1 ^= x0


def _flat_copy(xp: ModuleType, a, shape):
    return xp.array(xp.broadcast_to(a, shape), dtype=_U32).reshape(-1)


def _flat_key(xp: ModuleType, k, shape):
    # A scalar key stays one element and broadcasts; a key array is laid out like the counters.
    if k.size == 1:
        return xp.asarray(k, dtype=_U32).reshape(1)
    return xp.ascontiguousarray(xp.broadcast_to(k, shape), dtype=_U32).reshape(-1)
