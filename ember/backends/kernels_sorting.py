"""Kernels of the sorting family, written once against an array module `xp` (NumPy or CuPy).

Sorting reorders every operand by one permutation: a stable argsort per key,
least significant key first (an LSD radix sort over keys), each pass applied
with ``take_along_axis``. Complex keys split into (real, imag) keys, which
gives JAX's lexicographic order; argsort already puts NaN last and ties -0.0
with 0.0. float16/bfloat16 keys are compared as float32 (exact).

Cumulative max/min/logsumexp use the ufunc's ``accumulate`` on NumPy. CuPy
implements ``accumulate`` for only a few ufuncs, so other array modules get a
log-depth doubling scan (Hillis-Steele: ceil(log2 n) elementwise steps,
O(n log n) work), which needs nothing beyond slicing and the binary op.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_F32 = np.dtype(np.float32)


def sorting_kernels(xp: ModuleType) -> dict[str, Any]:
    """The kernels of ember.core.primitives.sorting for array module `xp`."""
    native_accumulate = xp.__name__ == "numpy"
    # NumPy's default kind is an unstable introsort; CuPy's only kind (None) is stable.
    stable_kind = "stable" if native_accumulate else None

    def sort(*operands, dimension, is_stable, num_keys):
        kind = stable_kind if is_stable or num_keys > 1 else None
        first = operands[0]
        if len(operands) == 1 and first.dtype.kind != "c" and first.dtype not in _LOW_PRECISION:
            return [xp.sort(first, axis=dimension, kind=kind)]
        perm = lexicographic_argsort(xp, operands[:num_keys], dimension, kind, stable_kind)
        return [xp.take_along_axis(x, perm, dimension) for x in operands]

    def top_k(x, *, k):
        # Descending and stable (lower index first among ties): a stable ascending argsort of the
        # reversed axis, read backwards. NaN sorts last ascending, so it comes first here.
        n = x.shape[-1]
        key = x.astype(_F32) if x.dtype in _LOW_PRECISION else x
        order = xp.argsort(xp.flip(key, -1), axis=-1, kind=stable_kind)
        index = (n - 1) - xp.flip(order, -1)[..., :k]
        return [xp.take_along_axis(x, index, -1), index.astype(np.int32)]

    def scan(fn):
        def kernel(x, *, axis, reverse):
            work = x.astype(_F32) if x.dtype in _LOW_PRECISION else x  # accumulate low precision in float32
            if reverse:
                work = xp.flip(work, axis)
            out = fn(work, axis)
            if reverse:
                out = xp.flip(out, axis)
            return out.astype(x.dtype, copy=False)

        return kernel

    def accumulate(name):
        ufunc = getattr(xp, name)
        if native_accumulate:
            return lambda x, axis: ufunc.accumulate(x, axis=axis)
        return lambda x, axis: doubling_scan(xp, ufunc, x, axis)

    return {
        "sort": sort,
        "top_k": top_k,
        "cumsum": scan(lambda x, axis: xp.cumsum(x, axis=axis, dtype=x.dtype)),
        "cumprod": scan(lambda x, axis: xp.cumprod(x, axis=axis, dtype=x.dtype)),
        "cummax": scan(accumulate("maximum")),
        "cummin": scan(accumulate("minimum")),
        "cumlogsumexp": scan(accumulate("logaddexp")),
    }


def lexicographic_argsort(xp: ModuleType, keys, axis: int, kind, stable_kind):
    """The permutation (along `axis`) sorting `keys` lexicographically, keys[0] most significant."""
    parts = []
    for key in keys:
        if key.dtype.kind == "c":
            parts += [xp.real(key), xp.imag(key)]
        elif key.dtype in _LOW_PRECISION:
            parts.append(key.astype(_F32))
        else:
            parts.append(key)
    perm = None
    for i, part in enumerate(reversed(parts)):
        # Every pass but the first must be stable to keep the order of the less significant keys.
        pass_kind = kind if i == 0 else stable_kind
        if perm is None:
            perm = xp.argsort(part, axis=axis, kind=pass_kind)
        else:
            order = xp.argsort(xp.take_along_axis(part, perm, axis), axis=axis, kind=pass_kind)
            perm = xp.take_along_axis(perm, order, axis)
    return perm


def doubling_scan(xp: ModuleType, op, x, axis: int):
    """Inclusive scan of the associative, commutative `op` along `axis` in ceil(log2 n) steps.

    After the step with shift s, out[i] combines x[max(0, i - 2s + 1) .. i].
    """
    n = x.shape[axis]
    out = x
    shift = 1
    while shift < n:
        combined = op(_range(out, axis, shift, n), _range(out, axis, 0, n - shift))
        out = xp.concatenate([_range(out, axis, 0, shift), combined], axis=axis)
        shift *= 2
    return out


def _range(x, axis: int, lo: int, hi: int):
    index = [slice(None)] * x.ndim
    index[axis] = slice(lo, hi)
    return x[tuple(index)]
