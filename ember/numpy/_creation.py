"""Array creation functions of ember.numpy."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array, Place, from_host
from ember.core.primitives import elementwise as ew
from ember.errors import ArgumentTypeError, DTypeError, InvalidArgumentError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, check_device, dtype_arg, full_for, on_device

Shape = int | Sequence[int]


def _shape(shape: Shape, op: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise ArgumentTypeError(f"{op}: shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise InvalidArgumentError(f"{op}: negative dimensions are not allowed, got shape {shape}")
    return shape


def array(object: ArrayLike, dtype=None, copy: bool = True, ndmin: int = 0, *, device=None) -> Array:
    """An Array from `object` (a copy; ember arrays are immutable, so copies are cheap to reason about);
    `device` commits it to that device (as ``ember.device_put``).

    >>> enp.array([[1, 2], [3, 4]], dtype="float32").shape
    (2, 2)
    """
    place = None if device is None else check_device("array", device)
    x = asarray(object, dtype)
    if copy and isinstance(object, Array) and x is object:
        x = ew.copy_p.bind(x)
    if x.ndim < ndmin:
        x = lax.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x if place is None else on_device(x, place)


def full(shape: Shape, fill_value: ArrayLike, dtype=None, *, device=None) -> Array:
    """An array of `shape` filled with `fill_value` (its dtype, unless `dtype` is given).

    >>> enp.full((2,), 7)
    Array([7, 7], dtype=int32, weak_type=True)
    """
    place = None if device is None else check_device("full", device)
    shape = _shape(shape, "full")
    value = asarray(fill_value, dtype)
    if value.ndim:
        from ember.numpy._shape import broadcast_to

        out = broadcast_to(value, shape)
        return out if place is None else on_device(out, place)
    # JAX's: a weak fill value with no dtype gives a weak array
    out = lax.broadcast_in_dim(value, shape, ())
    return out if place is None else on_device(out, place)


def zeros(shape: Shape, dtype=None, *, device=None) -> Array:
    """An array of zeros (float32 by default). Like every creation function, `device` (a device or its
    name) commits the result to that device, as ``ember.device_put`` does.

    >>> enp.zeros((2, 3)).shape
    (2, 3)
    >>> x = enp.zeros(2, device="cpu:0")
    >>> x.device, x.committed
    (CpuDevice(id=0), True)
    """
    place = None if device is None else check_device("zeros", device)
    out = full(_shape(shape, "zeros"), 0, dtype_arg(dtype) or dtypes.default_float())
    return out if place is None else on_device(out, place)


def ones(shape: Shape, dtype=None, *, device=None) -> Array:
    """An array of ones (float32 by default).

    >>> enp.ones(3)
    Array([1., 1., 1.], dtype=float32)
    """
    place = None if device is None else check_device("ones", device)
    out = full(_shape(shape, "ones"), 1, dtype_arg(dtype) or dtypes.default_float())
    return out if place is None else on_device(out, place)


def empty(shape: Shape, dtype=None, *, device=None) -> Array:
    """An array of `shape`; ember fills it with zeros (there is no uninitialised memory to expose).

    >>> enp.empty(2).shape
    (2,)
    """
    place = None if device is None else check_device("empty", device)
    out = zeros(_shape(shape, "empty"), dtype)
    return out if place is None else on_device(out, place)


def _like(name: str, value):
    def fn(a: ArrayLike, dtype=None, shape: Shape | None = None, *, device=None) -> Array:
        place = None if device is None else check_device(name, device)
        x = a if isinstance(a, Array) else asarray(a)
        target = dtype_arg(dtype) or x.dtype
        out = _weak_like(full(x.shape if shape is None else shape, value(target), target), x, dtype)
        return on_device(out, place or (_followed(x) if shape is None else None))

    fn.__name__ = fn.__qualname__ = name
    v = int(value(np.dtype("int32")))
    example = f">>> enp.{name}(enp.ones(3), dtype='int32')\nArray([{v}, {v}, {v}], dtype=int32)\n"
    fn.__doc__ = f"An array like `a` (shape and dtype, unless given) filled as `{name[:-5]}` fills.\n\n{example}"
    return fn


zeros_like = _like("zeros_like", lambda d: 0)
ones_like = _like("ones_like", lambda d: 1)
empty_like = _like("empty_like", lambda d: 0)


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype=None, shape: Shape | None = None, *, device=None) -> Array:
    """An array like `a` (shape and dtype, unless given) filled with `fill_value`; without `device` or
    `shape`, committed to `a`'s device when `a` is committed there (as JAX's; the ``*_like`` functions too).

    >>> enp.full_like(enp.ones(2), 5.0)
    Array([5., 5.], dtype=float32)
    """
    place = None if device is None else check_device("full_like", device)
    x = asarray(a)
    out = _weak_like(full(x.shape if shape is None else shape, fill_value, dtype_arg(dtype) or x.dtype), x, dtype)
    return on_device(out, place or (_followed(x) if shape is None else None))


def _followed(x: Array) -> Place | None:
    # As JAX's full_like: the result of a concrete committed `x` is committed to its device.
    return x._place if type(x) is Array and x._place.committed else None


def _weak_like(out: Array, a: Array, dtype) -> Array:
    # JAX's full_like: with no dtype given, the result has `a`'s weak type.
    return convert(out, out.dtype, True) if dtype is None and a.weak_type else out


def arange(start: ArrayLike, stop: ArrayLike | None = None, step: ArrayLike | None = None, dtype=None, *,
           device=None) -> Array:  # fmt: skip
    """Evenly spaced values in [start, stop) (NumPy's arange; ints give int32, floats float32).

    >>> enp.arange(5)
    Array([0, 1, 2, 3, 4], dtype=int32)
    """
    place = None if device is None else check_device("arange", device)
    for v in (start, stop, step):
        if isinstance(v, Array) and not type(v) is Array:
            raise InvalidArgumentError("arange: start, stop and step must be concrete (static) values")
    if dtype is not None and dtype_arg(dtype) == dtypes.bool_:
        raise DTypeError("arange: bool cannot count; use a numeric dtype (e.g. arange(n) != 0 for a bool mask)")
    for v in (start, stop, step):
        if v is not None and not isinstance(v, (Array, int, float, np.number, np.ndarray)):
            raise ArgumentTypeError(f"arange: start, stop and step must be real numbers, got {type(v).__name__} {v!r}")
    if step is not None and not isinstance(step, Array) and step == 0:
        raise InvalidArgumentError("arange: step must not be zero")
    values = np.arange(*[np.asarray(v) if isinstance(v, Array) else v for v in (start, stop, step) if v is not None])
    if dtype is None:
        result = from_host(values)
        if all(isinstance(v, (int, np.integer)) or v is None for v in (start, stop, step)):
            return result if place is None else on_device(result, place)
        out = convert(result, dtypes.default_float() if result.dtype.kind == "f" else result.dtype)
        return out if place is None else on_device(out, place)
    return asarray(values, dtype, device=device)


def _space_dtypes(start: Array, stop: Array, dtype) -> tuple[np.dtype, np.dtype]:
    """The result dtype (given, or the inexact promotion of start and stop) and the dtype to compute in."""
    if dtype is not None:
        target = dtype_arg(dtype)
    else:
        target = dtypes.promote((start.dtype, start.weak_type), (stop.dtype, stop.weak_type), (dtypes.default_float(), True))[0]
    return target, target if dtypes.is_inexact(target) else dtypes.default_float()


def _as_result(out: Array, target: np.dtype) -> Array:
    # NumPy and JAX floor before converting to an integer dtype (bool takes "nonzero").
    if dtypes.is_integer(target) and not dtypes.is_integer(out.dtype):
        out = lax.floor(out)
    return convert(out, target)


def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None) -> Array | tuple[Array, Array]:  # fmt: skip
    """`num` evenly spaced samples from `start` to `stop` (array endpoints broadcast).

    Args:
      start, stop: the first and last values (scalars or arrays, which broadcast).
      num: how many samples (non-negative).
      endpoint: include `stop` (else the samples stop one step short of it).
      retstep: also return the step between samples.
      dtype: the result dtype; by default the inexact promotion of start and stop. Integer results
        are floored, as in NumPy and JAX.
      axis: where the new axis of samples goes, for array endpoints.

    Returns:
      The samples, or (samples, step) with retstep.

    >>> enp.linspace(0.0, 1.0, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    place = None if device is None else check_device("linspace", device)
    from ember.numpy import _shape as sh

    num = _count("linspace", num)
    start, stop = asarray(start), asarray(stop)
    target, compute = _space_dtypes(start, stop, dtype)
    start, stop = sh.broadcast_arrays(convert(start, compute), convert(stop, compute))
    shape = start.shape
    div = (num - 1) if endpoint else num
    delta = lax.sub(stop, start)
    if div > 0:
        step = lax.div(delta, lax.full(shape, div, compute))
        steps = lax.broadcast_in_dim(lax.iota(compute, num), (num, *shape), (0,))
        out = lax.add(lax.broadcast_in_dim(start, (num, *shape), tuple(range(1, len(shape) + 1))),
                      lax.mul(steps, lax.broadcast_in_dim(step, (num, *shape), tuple(range(1, len(shape) + 1)))))
        if endpoint and num > 1:  # the last sample is exactly `stop`
            out = lax.concatenate([lax.slice_in_dim(out, 0, num - 1), sh.expand_dims(stop, 0)], 0)
    else:  # one sample with the endpoint, or none: no step (NaN, as NumPy and JAX)
        step = full_for("linspace", shape, math.nan, compute, start, stop)
        out = lax.broadcast_in_dim(start, (num, *shape), tuple(range(1, len(shape) + 1)))
    out = sh.moveaxis(out, 0, axis) if axis else out
    out = _as_result(out, target)
    out = (out, step) if retstep else out
    return out if place is None else on_device(out, place)


def _count(op: str, num) -> int:
    try:
        num = operator.index(num)
    except TypeError:
        raise InvalidArgumentError(f"{op}: num must be an integer, got {num!r}") from None
    if num < 0:
        raise InvalidArgumentError(f"{op}: num must be non-negative, got {num}")
    return num


def logspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, base: ArrayLike = 10.0,
             dtype=None, axis: int = 0) -> Array:  # fmt: skip
    """`base ** linspace(start, stop, num)`: samples evenly spaced on a log scale.

    Args:
      start, stop: the exponents of the first and last values.
      num, endpoint, axis: as for `linspace`.
      base: the base of the powers (a scalar, or an array broadcasting with start and stop).
      dtype: the result dtype; by default the inexact promotion of start and stop.

    Returns:
      The samples.

    >>> enp.logspace(0.0, 2.0, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    from ember.numpy import _shape as sh
    from ember.numpy._ufuncs import power

    start, stop = asarray(start), asarray(stop)
    target, compute = _space_dtypes(start, stop, dtype)
    exponents = linspace(convert(start, compute), convert(stop, compute), num, endpoint, axis=axis)
    if not isinstance(base, (int, float, complex)):
        base = asarray(base)
        if base.ndim:  # base broadcasts with start and stop, then gets the axis of samples
            shape = sh.broadcast_shapes(start.shape, stop.shape, base.shape)
            base = sh.expand_dims(sh.broadcast_to(base, shape), axis % (len(shape) + 1))
    return convert(power(base, exponents), target)


def geomspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0) -> Array:
    """Samples from `start` to `stop` with a constant ratio (a geometric progression).

    Negative and complex endpoints work as in NumPy: the progression is computed for start / sign(start)
    and rotated back, and the endpoints are exactly `start` and `stop`.

    Args:
      start, stop: the first and last values (non-zero).
      num, endpoint, axis: as for `linspace`.
      dtype: the result dtype; by default the inexact promotion of start and stop.

    Returns:
      The samples.

    >>> enp.geomspace(1.0, 16.0, 5).tolist()
    [1.0, 2.0, 4.0, 8.0, 16.0]
    """
    from ember.numpy import _shape as sh

    num = _count("geomspace", num)
    start, stop = asarray(start), asarray(stop)
    target, compute = _space_dtypes(start, stop, dtype)
    start, stop = sh.broadcast_arrays(convert(start, compute), convert(stop, compute))
    sign = lax.sign(start)
    lo, hi = lax.div(start, sign), lax.div(stop, sign)
    out = lax.exp(linspace(lax.log(lo), lax.log(hi), num, endpoint))
    if num > 0:  # exp(log(x)) need not be x: put the exact endpoints back
        last = num - 1 if endpoint and num > 1 else num
        pieces = [sh.expand_dims(lo, 0), lax.slice_in_dim(out, 1, last)]
        if last < num:
            pieces.append(sh.expand_dims(hi, 0))
        out = lax.concatenate(pieces, 0) if num > 1 else pieces[0]
    out = lax.mul(out, lax.broadcast_in_dim(sign, out.shape, tuple(range(1, out.ndim))))
    out = sh.moveaxis(out, 0, axis) if axis else out
    return convert(out, target)


def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None) -> Array:
    """A 2-d array with ones on the k-th diagonal.

    >>> enp.eye(2)
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    place = None if device is None else check_device("eye", device)
    N, M = _shape((N, N if M is None else M), "eye")
    rows = lax.broadcasted_iota(dtypes.default_int(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int(), (N, M), 1)
    from ember.numpy._ufuncs import equal

    out = convert(equal(cols - rows, k), dtype_arg(dtype) or dtypes.default_float())
    return out if place is None else on_device(out, place)


def identity(n: int, dtype=None) -> Array:
    """The n x n identity matrix.

    >>> enp.identity(2)
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None) -> Array:
    """Ones at and below the k-th diagonal, zeros above.

    >>> enp.tri(3)
    Array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    N, M = _shape((N, N if M is None else M), "tri")
    from ember.numpy._ufuncs import greater_equal

    rows = lax.broadcasted_iota(dtypes.default_int(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int(), (N, M), 1)
    return convert(greater_equal(rows + k, cols), dtype_arg(dtype) or dtypes.default_float())


def tril(m: ArrayLike, k: int = 0) -> Array:
    """Zero the elements above the k-th diagonal of the last two axes.

    >>> enp.tril(enp.ones((3, 3)))
    Array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    return _triangle("tril", m, k, lower=True)


def triu(m: ArrayLike, k: int = 0) -> Array:
    """Zero the elements below the k-th diagonal of the last two axes.

    >>> enp.triu(enp.ones((3, 3)))
    Array([[1., 1., 1.],
           [0., 1., 1.],
           [0., 0., 1.]], dtype=float32)
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

    >>> [g.shape for g in enp.meshgrid(enp.arange(3), enp.arange(2))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    from ember.numpy._shape import broadcast_to, ravel, reshape

    xs = [ravel(asarray(x)) for x in xi]
    n = len(xs)
    positions = list(range(n))
    if indexing == "xy" and n > 1:  # the first two outputs' axes trade places
        positions[0], positions[1] = 1, 0
    full_shape = [1] * n
    for x, pos in zip(xs, positions):
        full_shape[pos] = x.shape[0]
    out = [reshape(x, [x.shape[0] if d == pos else 1 for d in range(n)]) for x, pos in zip(xs, positions)]
    if sparse:
        return out
    return [broadcast_to(x, full_shape) for x in out]


def copy(a: ArrayLike) -> Array:
    """A copy of `a`.

    >>> enp.copy(enp.ones(2))
    Array([1., 1.], dtype=float32)
    """
    return ew.copy_p.bind(asarray(a))
