"""Array creation functions of ember.numpy."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.primitives import elementwise as ew
from ember.errors import InvalidArgumentError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, dtype_arg

Shape = int | Sequence[int]


def _shape(shape: Shape, op: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise InvalidArgumentError(f"{op}: shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise InvalidArgumentError(f"{op}: negative dimensions are not allowed, got shape {shape}")
    return shape


def array(object: ArrayLike, dtype=None, copy: bool = True, ndmin: int = 0) -> Array:  # noqa: A002
    """An Array from `object` (a copy; ember arrays are immutable, so copies are cheap to reason about).

    >>> array([[1, 2], [3, 4]], dtype="float32").shape
    (2, 2)
    """
    x = asarray(object, dtype)
    if copy and isinstance(object, Array) and x is object:
        x = ew.copy_p.bind(x)
    if x.ndim < ndmin:
        x = lax.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x


def full(shape: Shape, fill_value: ArrayLike, dtype=None) -> Array:
    """An array of `shape` filled with `fill_value` (its dtype, unless `dtype` is given).

    >>> full((2,), 7)
    """
    shape = _shape(shape, "full")
    value = asarray(fill_value, dtype)
    if value.ndim:
        from ember.numpy._shape import broadcast_to

        return broadcast_to(value, shape)
    if dtype is None and value.weak_type:
        value = convert(value, value.dtype, False)
    return lax.broadcast_in_dim(value, shape, ())


def zeros(shape: Shape, dtype=None) -> Array:
    """An array of zeros (float32 by default).

    >>> zeros((2, 3)).shape
    (2, 3)
    """
    return full(shape, 0, dtype_arg(dtype) or dtypes.default_float())


def ones(shape: Shape, dtype=None) -> Array:
    """An array of ones (float32 by default).

    >>> ones(3)
    """
    return full(shape, 1, dtype_arg(dtype) or dtypes.default_float())


def empty(shape: Shape, dtype=None) -> Array:
    """An array of `shape`; ember fills it with zeros (there is no uninitialised memory to expose).

    >>> empty(2).shape
    (2,)
    """
    return zeros(shape, dtype)


def _like(name: str, value):
    def fn(a: ArrayLike, dtype=None, shape: Shape | None = None) -> Array:
        x = a if isinstance(a, Array) else asarray(a)
        target = dtype_arg(dtype) or x.dtype
        return full(x.shape if shape is None else shape, value(target), target)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"An array like `a` (shape and dtype, unless given) filled as `{name[:-5]}` fills.\n\n>>> {name}(ones(3))\n"
    return fn


zeros_like = _like("zeros_like", lambda d: 0)
ones_like = _like("ones_like", lambda d: 1)
empty_like = _like("empty_like", lambda d: 0)


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype=None, shape: Shape | None = None) -> Array:
    """An array like `a` (shape and dtype, unless given) filled with `fill_value`.

    >>> full_like(ones(2), 5.0)
    """
    x = asarray(a)
    return full(x.shape if shape is None else shape, fill_value, dtype_arg(dtype) or x.dtype)


def arange(start: ArrayLike, stop: ArrayLike | None = None, step: ArrayLike | None = None, dtype=None) -> Array:
    """Evenly spaced values in [start, stop) (NumPy's arange; ints give int32, floats float32).

    >>> arange(5)
    """
    for v in (start, stop, step):
        if isinstance(v, Array) and not type(v) is Array:
            raise InvalidArgumentError("arange: start, stop and step must be concrete (static) values")
    values = np.arange(*[np.asarray(v) if isinstance(v, Array) else v for v in (start, stop, step) if v is not None])
    if dtype is None:
        result = from_host(values)
        if all(isinstance(v, (int, np.integer)) or v is None for v in (start, stop, step)):
            return result
        return convert(result, dtypes.default_float() if result.dtype.kind == "f" else result.dtype)
    return asarray(values, dtype)


def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0):  # fmt: skip
    """`num` evenly spaced samples from `start` to `stop` (array endpoints broadcast).

    >>> linspace(0.0, 1.0, 5)
    """
    from ember.numpy import _shape as sh
    from ember.numpy._ufuncs import add, multiply, subtract

    if num < 0:
        raise InvalidArgumentError(f"linspace: num must be non-negative, got {num}")
    start, stop = asarray(start), asarray(stop)
    target = dtype_arg(dtype) or dtypes.promote((start.dtype, False), (stop.dtype, False), (dtypes.default_float(), True))[0]
    compute = dtypes.default_float() if not dtypes.is_inexact(target) else target
    start, stop = convert(start, compute), convert(stop, compute)
    div = (num - 1) if endpoint else num
    shape = sh.broadcast_shapes(start.shape, stop.shape)
    steps = lax.iota(compute, num)
    steps = sh.reshape(steps, (num,) + (1,) * len(shape))
    delta = subtract(stop, start)
    step = delta / div if div > 0 else full(shape, math.nan, compute)
    out = add(start, multiply(steps, step)) if div > 0 else add(start, multiply(steps, delta))
    if endpoint and num > 1:
        out = sh.concatenate([out[:-1], sh.expand_dims(sh.broadcast_to(stop, shape), 0)], 0)
    out = sh.moveaxis(out, 0, axis) if axis else out
    out = convert(out, target) if out.dtype != target else out
    return (out, step) if retstep else out


def logspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype=None, axis: int = 0) -> Array:  # fmt: skip
    """`base ** linspace(start, stop, num)`.

    >>> logspace(0.0, 2.0, 3)
    """
    from ember.numpy._ufuncs import power

    exponents = linspace(start, stop, num, endpoint, dtype=None, axis=axis)
    out = power(asarray(base, exponents.dtype), exponents)
    return out if dtype is None else asarray(out, dtype)


def geomspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0) -> Array:
    """Numbers spaced evenly on a log scale from `start` to `stop`.

    >>> geomspace(1.0, 100.0, 3)
    """
    from ember.numpy._ufuncs import exp, log

    out = exp(linspace(log(start), log(stop), num, endpoint, axis=axis))
    return out if dtype is None else asarray(out, dtype)


def eye(N: int, M: int | None = None, k: int = 0, dtype=None) -> Array:  # noqa: N803
    """A 2-d array with ones on the k-th diagonal.

    >>> eye(2)
    """
    M = N if M is None else M  # noqa: N806
    rows = lax.broadcasted_iota(dtypes.default_int(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int(), (N, M), 1)
    from ember.numpy._ufuncs import equal

    return convert(equal(cols - rows, k), dtype_arg(dtype) or dtypes.default_float())


def identity(n: int, dtype=None) -> Array:
    """The n x n identity matrix.

    >>> identity(2)
    """
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None) -> Array:  # noqa: N803
    """Ones at and below the k-th diagonal, zeros above.

    >>> tri(3)
    """
    M = N if M is None else M  # noqa: N806
    from ember.numpy._ufuncs import greater_equal

    rows = lax.broadcasted_iota(dtypes.default_int(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int(), (N, M), 1)
    return convert(greater_equal(rows + k, cols), dtype_arg(dtype) or dtypes.default_float())


def tril(m: ArrayLike, k: int = 0) -> Array:
    """Zero the elements above the k-th diagonal of the last two axes.

    >>> tril(ones((3, 3)))
    """
    return _triangle("tril", m, k, lower=True)


def triu(m: ArrayLike, k: int = 0) -> Array:
    """Zero the elements below the k-th diagonal of the last two axes.

    >>> triu(ones((3, 3)))
    """
    return _triangle("triu", m, k, lower=False)


def _triangle(name: str, m: ArrayLike, k: int, lower: bool) -> Array:
    from ember.numpy._shape import broadcast_to
    from ember.numpy._ufuncs import where

    x = asarray(m)
    if x.ndim < 2:
        if x.ndim == 1:  # NumPy treats 1-d input as the rows of a square matrix
            x = broadcast_to(x, (x.shape[0], x.shape[0]))
        else:
            raise InvalidArgumentError(f"{name}: needs an array of at least 1 dimension, got shape {x.shape}")
    n, m_ = x.shape[-2:]
    keep = tri(n, m_, k if lower else k - 1, dtype=dtypes.bool_)
    if not lower:
        from ember.numpy._ufuncs import logical_not

        keep = logical_not(keep)
    return where(keep, x, zeros((), x.dtype))


def meshgrid(*xi: ArrayLike, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list[Array]:
    """Coordinate arrays from 1-d coordinate vectors ('xy' or 'ij' indexing).

    >>> [g.shape for g in meshgrid(arange(3), arange(2))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    from ember.numpy._shape import broadcast_to, ravel, reshape

    xs = [ravel(asarray(x)) for x in xi]
    n = len(xs)
    shapes = [[1] * n for _ in xs]
    for i, x in enumerate(xs):
        shapes[i][i] = x.shape[0]
    if indexing == "xy" and n > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    out = [reshape(x, s) for x, s in zip(xs, shapes)]
    if sparse:
        return out
    full_shape = [max(s[d] for s in shapes) for d in range(n)]
    return [broadcast_to(x, full_shape) for x in out]


def copy(a: ArrayLike) -> Array:
    """A copy of `a`.

    >>> copy(ones(2))
    """
    return ew.copy_p.bind(asarray(a))
