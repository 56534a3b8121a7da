"""Kernels for every primitive, written once against an array module `xp`.

`make_kernels(xp)` returns ``{primitive name: kernel}``. Kernels receive
backend buffers positionally and the primitive's static parameters by
keyword, and may assume the shape/dtype rule has already accepted the
operands. They return a buffer (or a scalar the core converts) whose dtype is
the rule's result dtype; where NumPy's own promotion would differ from JAX's
the kernel says so explicitly.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np

from ember.backends import special
from ember.backends.communicators import collective_kernels
from ember.backends.kernels_conv import c_order_of, conv_kernels
from ember.backends.kernels_eigen import eigen_kernels
from ember.backends.kernels_fft import fft_kernels
from ember.backends.kernels_indexing import make_indexing_kernels
from ember.backends.kernels_linalg import linalg_kernels
from ember.backends.kernels_random import make_random_kernels
from ember.backends.kernels_sorting import sorting_kernels
from ember.backends.strided import dense_order, inverse_permutation, strided_view

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_BOOL = np.dtype(np.bool_)  # (dtype identity: comparing with the type np.bool_ builds a dtype each time)
_UNSIGNED_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SIGNED_OF = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def make_kernels(xp: ModuleType) -> dict[str, Any]:
    """The shared kernel table for array module `xp` (NumPy or CuPy)."""
    k: dict[str, Any] = {}
    k.update(_elementwise(xp))
    k.update(_bitwise(xp))
    k.update(_special(xp))
    k.update(_structural(xp))
    k.update(_reductions(xp))
    k["dot_general"] = lambda lhs, rhs, **p: dot_general(xp, lhs, rhs, **p)
    k.update(make_indexing_kernels(xp))
    k.update(sorting_kernels(xp))
    k.update(make_random_kernels(xp))
    k.update(conv_kernels(xp))
    k.update(linalg_kernels(xp))
    k.update(eigen_kernels(xp))
    k.update(fft_kernels(xp))
    k.update(collective_kernels())  # across processes: bound by ember.distributed.initialize
    return k


# --- elementwise -----------------------------------------------------------------------


def _elementwise(xp: ModuleType) -> dict[str, Any]:
    def div(x, y):
        if x.dtype.kind in "iu":
            return _int_div(xp, x, y)
        return xp.true_divide(x, y)

    def rem(x, y):
        if x.dtype.kind in "iu":
            with np.errstate(divide="ignore", invalid="ignore"):
                return xp.fmod(x, y)
        return xp.fmod(x, y)

    def logistic(x):
        # 1 / (1 + exp(-x)) without overflow: exp only of non-positive numbers.
        if x.dtype.kind == "c":
            return 1 / (1 + xp.exp(-x))
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)

    def round_(x, *, rounding_method=0):
        if rounding_method == 1:
            return xp.rint(x)
        t = xp.trunc(x)
        return xp.where(xp.abs(x - t) >= 0.5, t + xp.sign(x), t).astype(x.dtype)

    def integer_pow(x, *, y):
        if y == 0:
            return xp.ones_like(x)
        if x.dtype.kind in "iu" or y < 0:
            return _repeated_squaring(xp, x, y)
        return xp.power(x, xp.asarray(y, dtype=x.dtype))

    def complex_(x, y):
        x, y = xp.broadcast_arrays(x, y)
        out = xp.empty(x.shape, dtype=np.result_type(x.dtype, np.complex64))
        out.real = x
        out.imag = y
        return out

    def sign(x):
        if x.dtype.kind == "u":
            return (x != 0).astype(x.dtype)
        return xp.sign(x)

    def select_n(which, *cases, out=None):
        if len(cases) == 1 and out is None:
            return cases[0]
        if which.dtype is _BOOL and len(cases) == 2:
            if xp is np and which.size >= BRANCHLESS_MIN and cases[0].dtype.itemsize in (2, 4, 8):
                return _select_bits(which, cases[1], cases[0], out)
            if out is None:
                return xp.where(which, cases[1], cases[0])
        if out is not None:  # generated code's own buffer (buffers.py): copies, so the bits are the cases'
            xp.copyto(out, cases[0])
            for i, case in enumerate(cases[1:], start=1):
                xp.copyto(out, case, where=which == i)
            return out
        out = cases[0]
        for i, case in enumerate(cases[1:], start=1):
            out = xp.where(which == i, case, out)
        return out

    def clamp(lo, x, hi):
        return xp.minimum(xp.maximum(x, lo), hi)

    return {
        "neg": xp.negative,
        "sign": sign,
        "floor": xp.floor,
        "ceil": xp.ceil,
        "round": round_,
        "is_finite": xp.isfinite,
        "exp": xp.exp,
        "exp2": xp.exp2,
        "log": xp.log,
        "log1p": xp.log1p,
        "expm1": xp.expm1,
        "tanh": xp.tanh,
        "logistic": logistic,
        "sin": xp.sin,
        "cos": xp.cos,
        "tan": xp.tan,
        "asin": xp.arcsin,
        "acos": xp.arccos,
        "atan": xp.arctan,
        "sinh": xp.sinh,
        "cosh": xp.cosh,
        "asinh": xp.arcsinh,
        "acosh": xp.arccosh,
        "atanh": xp.arctanh,
        "sqrt": xp.sqrt,
        "rsqrt": lambda x: 1 / xp.sqrt(x),
        "cbrt": xp.cbrt,
        "square": xp.square,
        "abs": xp.abs,
        "real": xp.real,
        "imag": xp.imag,
        "conj": xp.conj,
        "add": xp.add,
        "sub": xp.subtract,
        "mul": xp.multiply,
        "div": div,
        "rem": rem,
        "pow": xp.power,
        "max": xp.maximum,
        "min": xp.minimum,
        "atan2": xp.arctan2,
        "nextafter": xp.nextafter,
        "complex": complex_,
        "integer_pow": integer_pow,
        "select_n": select_n,
        "clamp": clamp,
        "convert_element_type": lambda x, *, new_dtype, weak_type=False: convert(xp, x, new_dtype),
        "bitcast_convert_type": lambda x, *, new_dtype: bitcast(xp, x, new_dtype),
        "reduce_precision": lambda x, *, exponent_bits, mantissa_bits: special.reduce_precision(
            xp, x, exponent_bits, mantissa_bits
        ),
        "copy": xp.copy,
        "stop_gradient": lambda x: x,  # arrays are immutable: the same buffer will do
    }


# From this many elements NumPy's `where` on an unpredictable mask (relu's derivative) loses to
# selecting bits with integer masks: ~3x slower on 64k random float32 elements.
BRANCHLESS_MIN = 4096


def _select_bits(which, on_true, on_false, out=None):
    """``where(which, on_true, on_false)`` without branches, for 2-, 4- and 8-byte elements, so the
    result has exactly the bits of the chosen operand: on the bits, ``a ^ ((a ^ b) & m)`` with m all
    ones where b is chosen. `out`, when given, is a C-ordered buffer of the result's shape and dtype
    to write into.

    The passes are few and follow memory: `a` (read twice) is an operand laid out like the result;
    the mask is made on `which`'s own elements (a mask broadcast over vmapped axes stays small); a
    case of one value (relu's 0) takes a single pass, ``b & m``. Operands laid out alike but not in C
    order (transposed views, a convolution's NHWC result) are worked on in their order: the result is
    then a transposed view, of `out`'s memory when `out` is given."""
    dtype = on_false.dtype
    ints = _SIGNED_OF[dtype.itemsize]
    if not which.shape == on_true.shape == on_false.shape:
        shape = np.broadcast_shapes(which.shape, on_true.shape, on_false.shape)
        which, on_true, on_false = (np.broadcast_to(x, shape) for x in (which, on_true, on_false))
    t, f = on_true.view(ints), on_false.view(ints)
    t_one, f_one = not any(t.strides), not any(f.strides)  # one value broadcast
    a_is_f = f_one if t_one or f_one else f.flags.c_contiguous or not t.flags.c_contiguous
    a, b = (f, t) if a_is_f else (t, f)
    one_value = not any(a.strides)
    lead = which if t_one and f_one else b if one_value else a
    perm = None if lead.flags.c_contiguous else c_order_of(lead)
    in_order = out is None or t_one and f_one or not one_value
    if perm is not None and (in_order or which.transpose(perm).flags.c_contiguous):
        into = None if out is None else out.reshape(-1).reshape([out.shape[i] for i in perm])
        res = _select_bits(which.transpose(perm), on_true.transpose(perm), on_false.transpose(perm), into)
        return res.transpose(inverse_permutation(perm))
    if t_one and f_one:  # two values (maximum's derivative: 1, 0.5): f ^ (which * (f ^ t)), two passes
        res = np.multiply(
            which.view(np.int8), t.flat[0] ^ f.flat[0], dtype=ints, out=None if out is None else out.view(ints)
        )
        np.bitwise_xor(res, f.flat[0], out=res)
        return out if out is not None else res.view(dtype)
    pick_b = _mask_of(which, ints, invert=not a_is_f)
    res = None if out is None else out.view(ints)
    if one_value:
        res = np.bitwise_and(b, pick_b, out=res)
        if a.flat[0]:
            np.bitwise_or(res, np.bitwise_and(a.flat[0], np.invert(pick_b)), out=res)
    else:
        res = np.bitwise_xor(a, b, out=res)
        np.bitwise_and(res, pick_b, out=res)
        np.bitwise_xor(res, a, out=res)
    return out if out is not None else res.view(dtype)


def _mask_of(which, ints, invert):
    """All ones (of integer type `ints`) where `which` holds, or where it does not with `invert`, in C
    order; made on which's own elements, the axes it is broadcast along (stride 0) kept of length one."""
    if 0 in which.strides:
        which = which[tuple(slice(None) if s else slice(0, 1) for s in which.strides)]
    if invert:  # 0 -> all ones, 1 -> 0, in one pass
        return np.subtract(which.view(np.int8), 1, dtype=ints, order="C")
    return np.negative(which.view(np.int8), dtype=ints, order="C")  # 1 -> all ones


def _int_div(xp, x, y):
    # C semantics (truncate toward zero), as lax.div; x / 0 gives 0 here.
    with np.errstate(divide="ignore", invalid="ignore"):
        q = xp.floor_divide(x, y)
        if x.dtype.kind == "i":
            r = xp.remainder(x, y)
            q = xp.where((r != 0) & ((x < 0) != (y < 0)), q + 1, q)
    return q.astype(x.dtype, copy=False)


def _repeated_squaring(xp, x, y):
    # Exact for integers (wrapping like C), and the reciprocal for negative y.
    base, n = x, abs(int(y))
    acc = None
    while n:
        if n & 1:
            acc = base if acc is None else acc * base
        n >>= 1
        if n:
            base = base * base
    return (1 / acc).astype(x.dtype) if y < 0 else acc


def convert(xp, x, dtype):
    """Cast like XLA's ConvertElementType: complex -> real keeps the real part, float -> bool is x != 0."""
    if x.dtype == np.bool_ and dtype != np.bool_:  # (a comparison's result to 0/1: NumPy's cast)
        return x.astype(dtype)
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = xp.real(x)
    if dtype == np.bool_:
        return x != 0
    if dtype.kind in "iu" and (x.dtype.kind == "f" or x.dtype in _LOW_PRECISION):
        return _float_to_int(xp, x, dtype)
    return x.astype(dtype)


def _float_to_int(xp, x, dtype):
    """Float to integer as JAX (XLA) converts: toward zero, saturating at the integer type's bounds
    (-inf and values below to the minimum, +inf and values above to the maximum), NaN to 0. A C cast
    is undefined out of range (NumPy wraps: -1.2 -> uint8 gave 255), so the bounds are applied here,
    the same on every backend."""
    if x.dtype in _LOW_PRECISION:
        x = x.astype(np.float32)  # exact, and float32 holds every bound below as a power of two
    lo, hi = _INT_RANGE[dtype]
    # The common case, all in range, is decided without a mask and cast without np.errstate (~1 us): NaN
    # fails every test. Small arrays test in Python, as NumPy's min and max cost ~0.8 us each however small.
    if x.size <= 32:
        if all(lo <= v < hi for v in x.ravel().tolist()):
            return x.astype(dtype)
    elif bool(x.min() >= lo) and bool(x.max() < hi):
        return x.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        out = x.astype(dtype)
    inside = (x >= lo) & (x < hi)  # False for NaN
    info = np.iinfo(dtype)
    zero, low, high = dtype.type(0), dtype.type(info.min), dtype.type(info.max)
    return xp.where(inside, out, xp.where(x > 0, high, xp.where(x < 0, low, zero)))


# Each integer type's float range [lo, hi): powers of two, exact in every float type the cast starts from
# (Python compares them with float32 values exactly; float(int64 max) + 1.0 rounds to 2**63, as it must).
_INT_RANGE = {
    np.dtype(t): (float(np.iinfo(t).min), float(np.iinfo(t).max) + 1.0)
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
}


def bitcast(xp, x, dtype):
    dtype = np.dtype(dtype)
    old, new = x.dtype.itemsize, dtype.itemsize
    x = xp.ascontiguousarray(x).reshape(x.shape)  # ascontiguousarray makes 0-d arrays 1-d
    if old == new:
        return x.view(dtype)
    if old > new:
        return x.view(dtype).reshape(*x.shape, old // new)
    return x.view(dtype).reshape(x.shape[:-1])


# --- bitwise and comparisons ----------------------------------------------------------------


def _bitwise(xp: ModuleType) -> dict[str, Any]:
    def bits(x):
        return 8 * x.dtype.itemsize

    def shift_left(x, y):
        ok = (y >= 0) & (y < bits(x))
        return xp.where(ok, xp.left_shift(x, xp.where(ok, y, 0)), 0).astype(x.dtype)

    def shift_right_logical(x, y):
        ok = (y >= 0) & (y < bits(x))
        u = x.view(_UNSIGNED_OF[x.dtype.itemsize])
        out = xp.right_shift(u, xp.where(ok, y, 0).astype(u.dtype))
        return xp.where(ok, out, 0).astype(u.dtype).view(x.dtype)

    def shift_right_arithmetic(x, y):
        s = x.view(_SIGNED_OF[x.dtype.itemsize])
        amount = xp.clip(xp.where(y < 0, bits(x) - 1, y), 0, bits(x) - 1).astype(s.dtype)
        return xp.right_shift(s, amount).view(x.dtype)

    def population_count(x):
        u = x.view(_UNSIGNED_OF[x.dtype.itemsize])
        return xp.bitwise_count(u).astype(x.dtype)

    def clz(x):
        # Binary search for the highest set bit over the unsigned bit pattern.
        u = x.view(_UNSIGNED_OF[x.dtype.itemsize]).copy()
        width = bits(x)
        count = xp.zeros(x.shape, dtype=x.dtype)
        step = width // 2
        while step:
            top_clear = (u >> (width - step)) == 0
            count = count + xp.where(top_clear, step, 0).astype(x.dtype)
            u = xp.where(top_clear, u << step, u)
            step //= 2
        return (count + ((u >> (width - 1)) == 0).astype(x.dtype)).astype(x.dtype)

    def not_(x):
        return xp.logical_not(x) if x.dtype == np.bool_ else xp.invert(x)

    return {
        "eq": xp.equal,
        "ne": xp.not_equal,
        "lt": xp.less,
        "le": xp.less_equal,
        "gt": xp.greater,
        "ge": xp.greater_equal,
        "not": not_,
        "and": xp.bitwise_and,
        "or": xp.bitwise_or,
        "xor": xp.bitwise_xor,
        "shift_left": shift_left,
        "shift_right_logical": shift_right_logical,
        "shift_right_arithmetic": shift_right_arithmetic,
        "population_count": population_count,
        "clz": clz,
    }


# --- special functions (see ember.backends.special) ------------------------------------


def _special(xp: ModuleType) -> dict[str, Any]:
    return {
        "erf": lambda x: special.erf(xp, x),
        "erfc": lambda x: special.erfc(xp, x),
        "erf_inv": lambda x: special.erf_inv(xp, x),
        "lgamma": lambda x: special.lgamma(xp, x),
        "digamma": lambda x: special.digamma(xp, x),
        "polygamma": lambda m, x: special.polygamma(xp, m, x),
        "zeta": lambda s, q: special.zeta(xp, s, q),
        "igamma": lambda a, x: special.igamma(xp, a, x),
        "igammac": lambda a, x: special.igammac(xp, a, x),
        "random_gamma_grad": lambda a, x: special.random_gamma_grad(xp, a, x),
    }


# --- structural --------------------------------------------------------------------------


def _structural(xp: ModuleType) -> dict[str, Any]:
    def iota(*, dtype, shape, dimension):
        line = xp.arange(shape[dimension], dtype=dtype)
        view = [1] * len(shape)
        view[dimension] = shape[dimension]
        return xp.broadcast_to(line.reshape(view), shape)

    def broadcast_in_dim(x, *, shape, broadcast_dimensions):
        if xp is np and x.flags.c_contiguous and x.size:
            # the read-only view np.broadcast_to makes, without its Python wrapper (2.1 -> 1.4 us)
            strides, step = [0] * len(shape), x.itemsize
            for size, d in zip(reversed(x.shape), reversed(broadcast_dimensions)):
                if size != 1:
                    strides[d] = step
                step *= size
            return strided_view(x, tuple(shape), tuple(strides))
        view = [1] * len(shape)
        for size, d in zip(x.shape, broadcast_dimensions):
            view[d] = size
        return xp.broadcast_to(x.reshape(view), shape)

    # The array methods, not xp's functions of the same name: those wrap them in Python (~1 us a call,
    # which a small jitted program makes dozens of).
    def reshape(x, *, new_sizes, dimensions=None):
        if dimensions is not None:
            x = x.transpose(dimensions)
        return x.reshape(new_sizes)

    def expand_dims(x, *, dimensions):
        shape = list(x.shape)
        for d in sorted(dimensions):  # (normalized by the primitive: axes of the result)
            shape.insert(d, 1)
        return x.reshape(shape)

    def pad(x, value, *, padding_config):
        return pad_kernel(xp, x, value, padding_config)

    def slice_(x, *, start_indices, limit_indices, strides=None):
        strides = strides or (1,) * x.ndim
        return x[tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices, strides))]

    return {
        "iota": iota,
        "broadcast_in_dim": broadcast_in_dim,
        "reshape": reshape,
        "transpose": lambda x, *, permutation: x.transpose(permutation),
        "squeeze": lambda x, *, dimensions: x.squeeze(axis=tuple(dimensions)) if dimensions else x,
        "expand_dims": expand_dims,
        "rev": lambda x, *, dimensions: x[tuple(slice(None, None, -1) if a in dimensions else slice(None)
                                               for a in range(x.ndim))] if dimensions else x,  # (np.flip wraps this)
        "concatenate": lambda *xs, dimension: xp.concatenate(xs, axis=dimension),
        "pad": pad,
        "slice": slice_,
    }


def pad_kernel(xp, x, value, config):
    """lax.pad: interior padding first, then low/high edges (negative ones crop)."""
    if any(interior for _, _, interior in config):
        shape = [n + max(n - 1, 0) * i for n, (_, _, i) in zip(x.shape, config)]
        spread = xp.full(shape, value, dtype=x.dtype)
        spread[tuple(slice(None, None, i + 1) for _, _, i in config)] = x
        x = spread
    # Positive edges first, then negative ones crop the padded array (XLA's order: pad (1, -1) of an
    # empty axis is empty, not one padding element).
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in config]
    if any(lo or hi for lo, hi in widths):
        out = xp.full([n + lo + hi for n, (lo, hi) in zip(x.shape, widths)], value, dtype=x.dtype)
        out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, widths))] = x
        x = out
    if any(lo < 0 or hi < 0 for lo, hi, _ in config):
        x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi, _) in zip(x.shape, config))]
    return x


# --- reductions --------------------------------------------------------------------------


_EINSUM_SUMS = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}
_BLAS_SUMS = {np.dtype(np.float32), np.dtype(np.float64)}
_SHORT_ROW = 256  # rows up to this long are summed by BLAS (see _sum_way)


@functools.lru_cache(maxsize=1024)
def _sum_way(shape, strides, dtype, axes) -> tuple:
    """How NumPy's `reduce_sum` kernel sums an array (shape, byte strides, dtype) over `axes`, kept per
    signature: ("rows", *`_rows_of`), ("einsum", the kept axes) or ("reduce",).

    The ufunc's reduce is slow on short rows. Summing across them (a per-channel sum of NHWC memory, a
    column sum) it runs an inner loop per row, as short as the kept axis; a product with a vector of ones
    adds whole rows in BLAS where the summed axes are one block of memory ((64, 36, 8) over axis 1: 28 ->
    3.2 us), and einsum adds them one after another elsewhere (8 us). Summing along short rows (a
    per-channel sum of NCHW memory) it runs a pairwise sum per row; the product of the rows with ones
    runs one BLAS call ((1024, 16) over axis 1: 15 -> 2.1 us). Long rows keep the pairwise sum's
    accuracy, and below ~1024 elements or over a few rows the ufunc is the faster."""
    if math.prod(shape) < 1024 or dtype not in _EINSUM_SUMS or math.prod(shape[a] for a in axes) < 8:
        return ("reduce",)
    # the axis that runs along memory (the smallest stride)
    inner = min((i for i in range(len(shape)) if shape[i] > 1), key=lambda i: abs(strides[i]), default=None)
    if inner is None:
        return ("reduce",)
    rows = _rows_of(shape, strides, dtype.itemsize, axes) if dtype in _BLAS_SUMS else None
    if inner in axes:  # along rows
        along = rows is not None and rows[1][0] >= 8 and rows[1][1] <= _SHORT_ROW
        return ("rows", *rows) if along else ("reduce",)
    if not 1 < shape[inner] <= 64:  # across rows, long ones
        return ("reduce",)
    return ("rows", *rows) if rows is not None else ("einsum", [i for i in range(len(shape)) if i not in axes])


def _rows_of(shape, strides, itemsize, axes):
    """How a sum over `axes` of an array (shape, byte strides) is ``ones @ (outer, summed, inner)``: (the
    transpose to memory order, that (outer, summed, inner) shape, the kept axes' shape in memory order,
    the transpose to their order); None where the array is not a transposed C-contiguous one, or the
    summed axes are not one block of its memory."""
    perm = dense_order(shape, strides, itemsize)
    if perm is None:
        return None
    laid = [shape[a] for a in perm]
    summed = [k for k, a in enumerate(perm) if a in axes and laid[k] > 1]
    if any(perm[k] not in axes and laid[k] > 1 for k in range(summed[0], summed[-1] + 1)):
        return None
    kept = [a for a in perm if a not in axes]
    block = (math.prod(laid[: summed[0]]), math.prod(laid[k] for k in summed), math.prod(laid[summed[-1] + 1 :]))
    return perm, block, tuple(shape[a] for a in kept), tuple(sorted(range(len(kept)), key=kept.__getitem__))


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype) -> np.ndarray:
    ones = np.ones(n, dtype)
    ones.flags.writeable = False
    return ones


def _reductions(xp: ModuleType) -> dict[str, Any]:
    def accumulating(fn):
        # float16/bfloat16 accumulate in float32, as XLA does, then round once.
        def kernel(x, *, axes):
            if x.dtype in _LOW_PRECISION:
                return fn(x.astype(np.float32), axis=tuple(axes)).astype(x.dtype)
            return fn(x, axis=tuple(axes), dtype=x.dtype)

        return kernel

    def sum_kernel(x, *, axes):
        way = _sum_way(x.shape, x.strides, x.dtype, tuple(axes)) if x.size >= 1024 else ("reduce",)
        if way[0] == "rows":
            _, perm, block, kept_shape, kept_perm = way
            x = x.transpose(perm)
            if block[2] == 1:  # the summed axes innermost: a dot product of each row with ones
                return np.matmul(x.reshape(block[:2]), _ones(block[1], x.dtype)).reshape(kept_shape).transpose(kept_perm)
            return np.matmul(_ones(block[1], x.dtype), x.reshape(block)).reshape(kept_shape).transpose(kept_perm)
        if way[0] == "einsum":
            return np.einsum(x, range(x.ndim), way[1])
        # `accumulating(np.add.reduce)` written out: a second Python call costs small sums ~0.5 us each
        if x.dtype in _LOW_PRECISION:
            return np.add.reduce(x.astype(np.float32), axis=tuple(axes)).astype(x.dtype)
        return np.add.reduce(x, axis=tuple(axes), dtype=x.dtype)

    def extremum(fn, identity_of):
        def kernel(x, *, axes):
            axes = tuple(axes)
            if x.size == 0 or any(x.shape[a] == 0 for a in axes):
                shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
                return xp.full(shape, identity_of(x.dtype), dtype=x.dtype)
            return fn(x, axis=axes)

        return kernel

    def arg_extremum(fn):
        def kernel(x, *, axes, index_dtype):
            return fn(x, axis=axes[0]).astype(index_dtype)

        return kernel

    def logical(fn):
        def kernel(x, *, axes):
            if x.dtype == np.bool_:
                return fn(x, axis=tuple(axes))
            ufunc = xp.bitwise_and if fn is xp.all else xp.bitwise_or
            return ufunc.reduce(x, axis=tuple(axes)) if x.size else _empty_logical(xp, x, axes, fn)

        return kernel

    # NumPy's sum/prod/max/min are these ufuncs' reduce behind a Python wrapper (~1 us a call)
    numpy = xp is np
    return {
        "reduce_sum": sum_kernel if numpy else accumulating(xp.sum),
        "reduce_prod": accumulating(np.multiply.reduce if numpy else xp.prod),
        "reduce_max": extremum(np.maximum.reduce if numpy else xp.max, _lowest),
        "reduce_min": extremum(np.minimum.reduce if numpy else xp.min, _highest),
        "reduce_and": logical(xp.all),
        "reduce_or": logical(xp.any),
        "argmax": arg_extremum(xp.argmax),
        "argmin": arg_extremum(xp.argmin),
    }


def _empty_logical(xp, x, axes, fn):
    shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
    all_bits = np.iinfo(x.dtype).max if x.dtype.kind == "u" else -1
    return xp.full(shape, all_bits if fn is xp.all else 0, dtype=x.dtype)


def _lowest(dtype):
    if dtype == np.bool_:
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


def _highest(dtype):
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.inf


# --- contraction -----------------------------------------------------------------------------


def dot_general(xp, lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out=None,
                any_order=False):  # fmt: skip
    """Contract by moving axes to (batch, free, contract) and calling one matmul. `out`, when given,
    is a C-contiguous buffer of the result's shape and dtype (that of both operands) to write into.
    `any_order` (generated code, for a result that only elementwise code, reductions or the caller
    read): the result may be laid out in another order (see `_outer_products`), in `out`'s memory."""
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    compute = out_dtype
    if out_dtype in _LOW_PRECISION:
        compute = np.dtype(np.float32)
    elif out_dtype == np.bool_:
        compute = np.dtype(np.int32)
    lhs, rhs = lhs.astype(compute, copy=False), rhs.astype(compute, copy=False)
    if not lb and len(lc) == 1 and rhs.ndim <= 2 and (lhs.ndim <= 2 or lc[0] == lhs.ndim - 1):
        # A matrix/vector product, either operand maybe transposed (jit folds transposes into the
        # dimension numbers): np.dot of the transposed views, which the BLAS reads as they are, is the
        # call eager mode makes for `x @ w.T` (no relayout: 4.7 -> 1.2 us for a 16 x 16 matvec).
        rhs = rhs if rc[0] == 0 else rhs.T
        if lhs.ndim <= 2:
            result = xp.dot(lhs if lc[0] == lhs.ndim - 1 else lhs.T, rhs, out=out)
        else:
            # (..., k) goes in as one 2-D matrix, since NumPy's N-d dot makes a strided dot product of
            # every element ((256, 1, 64) @ (64, 2304), a vmapped Linear layer: 17 -> 0.6 ms)
            rows = math.prod(lhs.shape[:-1])
            into = out.reshape((rows, *rhs.shape[1:])) if out is not None and out.flags.c_contiguous else None
            result = xp.dot(lhs.reshape(rows, lhs.shape[-1]), rhs, out=into).reshape(lhs.shape[:-1] + rhs.shape[1:])
    else:
        result = _dot_via_matmul(xp, lhs, rhs, lc, rc, lb, rb, out, any_order)
    if out_dtype == np.bool_:
        return result != 0
    return result.astype(out_dtype, copy=False)


def _outer_products(xp, a, c, shape, out=None, any_order=False):
    """A batch of outer products, ``a (b, m)`` times ``c (b, n)`` -> (b, m, n) reshaped to `shape`
    (per-example weight gradients). BLAS does these as k=1 matrix products, several times slower than
    einsum's product loop, whose inner loop runs along the result's last axis. With `any_order`, when
    n is the shorter (a dense layer's 10 classes), the products are laid out (b, n, m) in memory and
    returned as a transposed view, (64, 256) x (64, 10): 72 -> 27 us (`out`, a C-ordered buffer of
    `shape`, then holds them in that layout). A reshape of that view would copy it (1.4x the time
    saved): hence only where nothing but elementwise code, reductions or the caller reads it."""
    nb, m, n = a.shape[0], a.shape[1], c.shape[1]
    into = None if out is None else out.reshape(-1)  # (CuPy's einsum takes no `out`; only NumPy's code passes one)
    if any_order and n < m:
        result = xp.einsum("bi,bj->bji", a, c, out=None if into is None else into.reshape(nb, n, m))
        return result.swapaxes(1, 2).reshape(shape)
    return xp.einsum("bi,bj->bij", a, c, out=None if into is None else into.reshape(nb, m, n)).reshape(shape)


def _dot_via_matmul(xp, lhs, rhs, lc, rc, lb, rb, out=None, any_order=False):
    lperm, rperm, (nb, m, k, n), shape = _matmul_plan(lhs.shape, rhs.shape, tuple(lc), tuple(rc), tuple(lb), tuple(rb))
    if k == 1:
        return _outer_products(xp, lhs.transpose(lperm).reshape(nb, m), rhs.transpose(rperm).reshape(nb, n), shape, out,
                               any_order)  # fmt: skip
    a = lhs.transpose(lperm).reshape(nb, m, k)
    c = rhs.transpose(rperm).reshape(nb, k, n)
    if nb == 1:
        # One matrix product: 2-D, so that a transposed view goes to the BLAS as such (a stack of one
        # transposed matrix takes NumPy's loop without the BLAS, ~9x slower for h.T @ d).
        into = None if out is None else out.reshape(m, n)
        return xp.matmul(a[0], c[0], out=into).reshape(shape)
    into = None if out is None else out.reshape(nb, m, n)
    return xp.matmul(a, c, out=into).reshape(shape)


@functools.lru_cache(maxsize=1024)
def _matmul_plan(lhs_shape, rhs_shape, lc, rc, lb, rb):
    """`_dot_via_matmul`'s transposes to (batch, free, contracted) and (batch, contracted, free), its
    (batch, m, k, n) sizes and the result's shape, kept per signature (working them out cost a batch
    of outer products 4 of its 32 us)."""
    lf = [i for i in range(len(lhs_shape)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rhs_shape)) if i not in rc and i not in rb]
    batch = [lhs_shape[i] for i in lb]
    lfree = [lhs_shape[i] for i in lf]
    rfree = [rhs_shape[i] for i in rf]
    sizes = (math.prod(batch), math.prod(lfree), math.prod(lhs_shape[i] for i in lc), math.prod(rfree))
    return (*lb, *lf, *lc), (*rb, *rc, *rf), sizes, tuple(batch + lfree + rfree)
