"""Reductions of ember.numpy: sum, prod, mean, var, std, max, min, argmax, all, any, nan-variants.

Each takes NumPy's `axis`, `keepdims`, `dtype` and `where` (where NumPy has
them). Sums and products of bool and small integers accumulate in the default
integer dtype, as in JAX. As JAX's: results are never weakly typed; mean, var
and std of bool and integers up to 32 bits are float32 (float64 only for 64-bit
integers); and a `where` mask broadcasts together with the array in sum, prod,
max, min, all, any, nansum and nanmean (a mask with more leading dimensions adds
them to the result, `axis` counting the array's own dimensions), while mean,
var and std need a mask that broadcasts to the array.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ember import lax
from ember._traceback import filter_error
from ember.core import dtypes
from ember.core.array import Array, wrap
from ember.core.primitives import reduction as rd
from ember.core.primitives._rules import broadcast_shapes
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.lax import _fastlane
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, canonical_axes, dtype_arg
from ember.numpy._shape import broadcast_to, expand_dims
from ember.numpy._ufuncs import isnan, logical_not, where

Axis = int | tuple[int, ...] | None


def _keep(out: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    return expand_dims(out, axes) if keepdims and axes else out


def _upcast_for_sum(dtype):
    if dtype == dtypes.bool_ or dtypes.is_signed(dtype) and dtype.itemsize < dtypes.default_int().itemsize:
        return dtypes.default_int()
    if dtypes.is_unsigned(dtype) and dtype.itemsize < dtypes.default_uint().itemsize:
        return dtypes.default_uint()
    return dtype


def _masked(op: str, x: Array, where_, identity) -> Array:
    if where_ is None:
        return x
    mask = asarray(where_)
    if mask.dtype != dtypes.bool_:
        raise DTypeError(f"{op}: where= must be a bool array, got {mask.dtype}")
    # JAX's rule: the array and the mask broadcast together, so a mask with more leading dimensions
    # adds them to the result, while `axis` keeps counting the array's own dimensions.
    shape = broadcast_shapes(f"{op}(where=...)", x.shape, mask.shape)
    x, mask = broadcast_to(x, shape), broadcast_to(mask, shape)
    fill = lax.broadcast_in_dim(asarray(np.asarray(identity, x.dtype)), x.shape, ())  # a NumPy scalar: uint32's max fits
    return lax.select(mask, x, fill)


def _sum_like(op: str, prim, identity, a, axis, dtype, keepdims, initial, where_) -> Array:
    x = asarray(a)
    axes = canonical_axes(op, axis, x.ndim)
    target = dtype_arg(dtype) or _upcast_for_sum(x.dtype)
    x = convert(x, target)  # strong, as JAX's reductions return: sum(2.0) is a float32, not a weak one
    x = _masked(op, x, where_, identity)
    out = prim.bind(x, axes=axes)
    if initial is not None:
        from ember.numpy._ufuncs import add, multiply

        out = (add if prim is rd.reduce_sum_p else multiply)(out, asarray(initial, out.dtype))
    return _keep(out, axes, keepdims)


def sum(a: ArrayLike, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
    """Sum of elements over `axis`.

    >>> sum(enp.asarray([[1, 2], [3, 4]]), axis=0)
    Array([4, 6], dtype=int32)
    """
    if (axis is None and dtype is None and out is None and not keepdims and initial is None and where is None
            and type(a) is Array and _fastlane.on):
        # Fast lane: a whole float/complex array summed in its own dtype, as the kernel does (np.sum is
        # add.reduce behind a Python wrapper: the same call, so the same bits).
        v = a._value
        dt = v.dtype
        if dt in _SUMS_IN_OWN_DTYPE and 0 < v.ndim < 8 and a._place.host:
            result = _new(Array)  # (inline, as the lanes wrap: this is eager's hottest reduction)
            result._value = _asarray(_add_reduce(v, _ALL_AXES[v.ndim], dt))  # (positional arguments: cheaper)
            result._weak = False
            result._place = a._place
            return result
    try:
        _no_out("sum", out)
        return _sum_like("sum", rd.reduce_sum_p, 0, a, axis, dtype, keepdims, initial, where)
    except Exception as err:  # sum is its own traceback boundary, as the lanes are (_fastlane.py)
        filter_error(err)
        raise


sum.__ember_boundary__ = True


_add_reduce = np.add.reduce
_asarray = np.asarray
_new = object.__new__
_SUMS_IN_OWN_DTYPE = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
_ALL_AXES = [tuple(range(n)) for n in range(8)]


def prod(a: ArrayLike, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
    """Product of elements over `axis`.

    >>> enp.prod(enp.asarray([1.0, 2.0, 3.0]))
    Array(6., dtype=float32)
    """
    _no_out("prod", out)
    return _sum_like("prod", rd.reduce_prod_p, 1, a, axis, dtype, keepdims, initial, where)


def _extremum(op: str, prim, a, axis, keepdims, initial, where_) -> Array:
    x = asarray(a)
    axes = canonical_axes(op, axis, x.ndim)
    if dtypes.is_complex(x.dtype):
        raise DTypeError(f"{op}: complex arrays have no ordering here; take {op} of x.real or abs(x)")
    x = convert(x, x.dtype)
    empty = builtins.any(x.shape[i] == 0 for i in axes)  # this module's `any` shadows the builtin
    if initial is None and (empty or where_ is not None):
        if empty:
            raise ShapeError(f"{op}: zero-size reduction over axis {axis} of shape {x.shape} has no identity; pass initial=")
        raise InvalidArgumentError(f"{op}: where= needs initial= (as in NumPy)")
    if where_ is not None:
        x = _masked(op, x, where_, _identity_of(prim, x.dtype))
    out = prim.bind(x, axes=axes)
    if initial is not None:
        from ember.numpy._ufuncs import maximum, minimum

        out = (maximum if prim is rd.reduce_max_p else minimum)(out, asarray(initial, out.dtype))
    return _keep(out, axes, keepdims)


def _identity_of(prim, dtype):
    if dtypes.is_integer(dtype):
        info = dtypes.iinfo(dtype)
        return info.min if prim is rd.reduce_max_p else info.max
    if dtype == dtypes.bool_:
        return prim is not rd.reduce_max_p
    return -math.inf if prim is rd.reduce_max_p else math.inf


_ORDERED = frozenset(np.dtype(t) for t in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                           "uint8", "uint16", "uint32", "uint64"))  # fmt: skip


def _extremum_function(op: str, prim, example: str):
    """enp.max or enp.min: `_extremum` with a fast lane in front for a whole non-empty concrete CPU array
    (the primitive's own kernel, so the same bits; a strong result, as the general path's). The function
    is its own traceback boundary, as the lanes are (ember/lax/_fastlane.py)."""
    kernel = prim.kernel()

    def fn(a: ArrayLike, axis: Axis = None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
        if (axis is None and out is None and not keepdims and initial is None and where is None and type(a) is Array
                and _fastlane.on and a._place.host):
            v = a._value
            if v.size and v.dtype in _ORDERED and v.ndim < 8:
                total = kernel(v, axes=_ALL_AXES[v.ndim])
                return wrap(total if type(total) is np.ndarray else np.asarray(total), False, a._place)
        try:
            _no_out(op, out)
            return _extremum(op, prim, a, axis, keepdims, initial, where)
        except Exception as err:
            filter_error(err)
            raise

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"""{op.capitalize()}imum over `axis` (NaN propagates).

    >>> {op}(enp.asarray([1.0, 3.0, 2.0]))
    {example}
    """
    fn.__ember_boundary__ = True
    return fn


max = _extremum_function("max", rd.reduce_max_p, "Array(3., dtype=float32)")
min = _extremum_function("min", rd.reduce_min_p, "Array(1., dtype=float32)")
amax, amin = max, min


def _logical_reduce(op: str, prim, a, axis, keepdims, where_) -> Array:
    from ember.numpy._ufuncs import _to_bool

    x = convert(_to_bool(op, a), dtypes.bool_)  # a weak bool (a comparison of Python scalars) reduces to a strong one
    axes = canonical_axes(op, axis, x.ndim)
    x = _masked(op, x, where_, prim is rd.reduce_and_p)
    return _keep(prim.bind(x, axes=axes), axes, keepdims)


def all(a: ArrayLike, axis: Axis = None, out=None, keepdims: bool = False, *, where=None) -> Array:
    """Whether every element over `axis` is true (nonzero).

    >>> all(enp.asarray([1, 0]))
    Array(False, dtype=bool)
    """
    _no_out("all", out)
    return _logical_reduce("all", rd.reduce_and_p, a, axis, keepdims, where)


def any(a: ArrayLike, axis: Axis = None, out=None, keepdims: bool = False, *, where=None) -> Array:
    """Whether any element over `axis` is true (nonzero).

    >>> any(enp.asarray([1, 0]))
    Array(True, dtype=bool)
    """
    _no_out("any", out)
    return _logical_reduce("any", rd.reduce_or_p, a, axis, keepdims, where)


def _count(x: Array, axes, where_) -> Array | int:
    if where_ is None:
        return math.prod(x.shape[i] for i in axes)
    mask = asarray(where_)
    if broadcast_shapes("mean(where=...)", x.shape, mask.shape) != x.shape:
        # JAX's mean, var and std count with the mask broadcast to the array, never the other way.
        raise ShapeError(f"mean/var/std: where= of shape {mask.shape} does not broadcast to the array's shape {x.shape}; "
                         "a mask with more dimensions works with sum, prod, max, min, all, any and nanmean")  # fmt: skip
    mask = broadcast_to(mask, x.shape)
    return lax.reduce_sum(convert(mask, dtypes.default_int()), axes)


def _mean_dtype(x: Array, dtype):
    if dtype is not None:
        return dtype_arg(dtype)
    if dtypes.is_inexact(x.dtype):
        return x.dtype
    # JAX's table (dtypes.to_inexact_dtype): bool and integers up to 32 bits average in float32,
    # 64-bit integers (x64 on) in float64; not the default float, which is float64 under x64.
    return dtypes.float64 if x.dtype.itemsize == 8 else dtypes.float32


def mean(a: ArrayLike, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, *, where=None) -> Array:
    """Arithmetic mean over `axis` (integers average in the default float dtype).

    >>> enp.mean(enp.asarray([1, 2, 3, 4]))
    Array(2.5, dtype=float32)
    """
    _no_out("mean", out)
    x = asarray(a)
    axes = canonical_axes("mean", axis, x.ndim)
    target = _mean_dtype(x, dtype)
    total = sum(convert(x, target), axis=axes, where=where)
    count = _count(x, axes, where)
    out_ = total / (asarray(count, dtypes.real_dtype(target)) if isinstance(count, Array) else count)
    return _keep(convert(out_, target), axes, keepdims)


def var(a: ArrayLike, axis: Axis = None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *,
        where=None, correction=None) -> Array:  # fmt: skip
    """Variance over `axis` (mean of |x - mean|**2), divided by N - ddof.

    >>> enp.var(enp.asarray([1.0, 2.0, 3.0, 4.0]))
    Array(1.25, dtype=float32)
    """
    _no_out("var", out)
    if correction is not None:
        ddof = correction
    x = asarray(a)
    axes = canonical_axes("var", axis, x.ndim)
    target = _mean_dtype(x, dtype)
    x = convert(x, target)
    centered = x - mean(x, axis=axes, keepdims=True, where=where)
    from ember.numpy._ufuncs import conjugate

    squares = (centered * conjugate(centered)) if dtypes.is_complex(target) else centered * centered
    if dtypes.is_complex(target):
        from ember.numpy._ufuncs import real

        squares = real(squares)
    count = _count(x, axes, where)
    total = sum(squares, axis=axes, where=where)
    denominator = count - ddof
    out_ = total / (asarray(denominator, total.dtype) if isinstance(denominator, Array) else denominator)
    return _keep(out_, axes, keepdims)


def std(a: ArrayLike, axis: Axis = None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *,
        where=None, correction=None) -> Array:  # fmt: skip
    """Standard deviation over `axis`: sqrt(var).

    >>> enp.std(enp.asarray([1.0, 2.0, 3.0, 4.0]))
    Array(1.118034, dtype=float32)
    """
    from ember.numpy._ufuncs import sqrt

    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _arg(op: str, prim, a, axis, keepdims) -> Array:
    x = asarray(a)
    if dtypes.is_complex(x.dtype):
        raise DTypeError(f"{op}: complex arrays have no ordering here; use {op}(abs(x)) or {op}(x.real)")
    if x.dtype == dtypes.bool_:
        x = convert(x, dtypes.int8)
    if axis is None:
        from ember.numpy._shape import ravel

        out = prim.bind(ravel(x), axes=(0,), index_dtype=dtypes.default_int()) if x.size else _empty_arg(op, x)
        return lax.reshape(out, (1,) * x.ndim) if keepdims else out
    axes = canonical_axes(op, axis, x.ndim)
    if x.shape[axes[0]] == 0:
        _empty_arg(op, x)
    return _keep(prim.bind(x, axes=axes, index_dtype=dtypes.default_int()), axes, keepdims)


def _empty_arg(op: str, x: Array):
    raise ShapeError(f"{op}: attempt to get {op} of an empty sequence (shape {x.shape})")


def argmax(a: ArrayLike, axis: int | None = None, out=None, keepdims: bool = False) -> Array:
    """Index of the first maximum (over the flattened array when axis is None).

    >>> enp.argmax(enp.asarray([1.0, 3.0, 2.0]))
    Array(1, dtype=int32)
    """
    _no_out("argmax", out)
    return _arg("argmax", rd.argmax_p, a, axis, keepdims)


def argmin(a: ArrayLike, axis: int | None = None, out=None, keepdims: bool = False) -> Array:
    """Index of the first minimum (over the flattened array when axis is None).

    >>> enp.argmin(enp.asarray([1.0, 3.0, 2.0]))
    Array(0, dtype=int32)
    """
    _no_out("argmin", out)
    return _arg("argmin", rd.argmin_p, a, axis, keepdims)


def nansum(a: ArrayLike, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
    """Sum treating NaN as zero.

    >>> enp.nansum(enp.asarray([1.0, float("nan")]))
    Array(1., dtype=float32)
    """
    x = asarray(a)
    if dtypes.is_inexact(x.dtype):
        x = where_nan(x, 0)
    return sum(x, axis, dtype, out, keepdims, initial, where)


def nanmean(a: ArrayLike, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, *, where=None) -> Array:
    """Mean ignoring NaNs (NaN where every element is NaN).

    >>> enp.nanmean(enp.asarray([1.0, float("nan"), 3.0]))
    Array(2., dtype=float32)
    """
    x = asarray(a)
    if not dtypes.is_inexact(x.dtype):
        return mean(x, axis, dtype, out, keepdims, where=where)
    _no_out("nanmean", out)
    # As JAX: nansum over the count of non-NaN elements, both masked by `where` (which may broadcast
    # x, as in every masked sum).
    target = _mean_dtype(x, dtype)
    count = sum(logical_not(isnan(x)), axis, dtypes.default_int(), None, keepdims, None, where)
    total = nansum(x, axis, target, None, keepdims, None, where)
    return total / convert(count, dtypes.real_dtype(target))


def where_nan(x: Array, value) -> Array:
    return where(isnan(x), asarray(value, x.dtype), x)


def _no_out(op: str, out) -> None:
    if out is not None:
        raise InvalidArgumentError(f"{op}: ember arrays are immutable, so out= is not supported; use the return value")
