"""Index helpers, comparisons and selection of ember.numpy: diag, diagflat, the diag/tril/triu
index functions, unravel_index, ravel_multi_index, lexsort, select, isin, allclose, array_equal,
array_equiv.

Index arrays have the default integer dtype (NumPy's intp). The *_indices functions depend only on
static sizes, so they are constants under every transform. Whole-array comparisons (allclose,
array_equal, array_equiv) return a 0-d bool Array (NumPy returns a Python bool; JAX an array) so
that they can be traced.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.transfer import follow
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, full_for, promote_args
from ember.numpy._reductions import all as _all
from ember.numpy._reductions import any as _any
from ember.numpy._shape import broadcast_arrays, broadcast_shapes, ravel
from ember.numpy._statistics import known
from ember.numpy._ufuncs import equal, isnan, logical_and, logical_not, logical_or, where

__all__ = [
    "allclose",
    "array_equal",
    "array_equiv",
    "diag",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "isin",
    "lexsort",
    "ravel_multi_index",
    "select",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
]  # fmt: skip


def _index(values: np.ndarray) -> Array:
    return asarray(np.asarray(values).astype(dtypes.default_int()))


def _int(op: str, name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise InvalidArgumentError(f"{op}: {name} must be an int, got {value!r}")
    return operator.index(value)


# --- diagonals ------------------------------------------------------------------------------------


def diag(v: ArrayLike, k: int = 0) -> Array:
    """The k-th diagonal of a 2-d array, or a 2-d array with the 1-d `v` on its k-th diagonal.

    Args:
      v: a 1-d array (put on a diagonal) or a 2-d array (its diagonal taken).
      k: the diagonal: 0 the main one, > 0 above it, < 0 below it.

    Returns:
      A 1-d array (from a 2-d `v`) or a square array of side len(v) + |k| (from a 1-d `v`).

    >>> enp.diag(enp.asarray([1, 2]), k=1).tolist()
    [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    >>> enp.diag(enp.asarray([[1, 2], [3, 4]]))
    Array([1, 4], dtype=int32)
    """
    from ember.numpy._take import diagonal

    x = asarray(v)
    k = _int("diag", "k", k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ShapeError(f"diag: input must be 1-d or 2-d, got shape {x.shape}")
    n = x.shape[0] + abs(k)
    if x.shape[0] == 0:  # nothing to place (and scatter's jvp rejects a zero-size operand)
        return full_for("diag", (n, n), 0, x.dtype, x)
    rows = np.arange(x.shape[0]) + max(-k, 0)
    cols = np.arange(x.shape[0]) + max(k, 0)
    return lax.full((n, n), 0, x.dtype).at[_index(rows), _index(cols)].set(x)


def diagflat(v: ArrayLike, k: int = 0) -> Array:
    """A 2-d array with the flattened `v` on its k-th diagonal.

    Args:
      v: any array (flattened).
      k: the diagonal (0 main, > 0 above, < 0 below).

    Returns:
      A square array of side v.size + |k|.

    >>> enp.diagflat(enp.asarray([[1, 2]]), -1).tolist()
    [[0, 0, 0], [1, 0, 0], [0, 2, 0]]
    """
    return diag(ravel(asarray(v)), k)


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """Indices of the main diagonal of an n x n x ... array of `ndim` dimensions.

    Args:
      n: the size of each dimension.
      ndim: the number of dimensions.

    Returns:
      `ndim` copies of arange(n), default integers.

    >>> enp.diag_indices(3)
    (Array([0, 1, 2], dtype=int32), Array([0, 1, 2], dtype=int32))
    """
    n, ndim = _int("diag_indices", "n", n), _int("diag_indices", "ndim", ndim)
    if n < 0 or ndim < 0:
        raise InvalidArgumentError(f"diag_indices: n and ndim must be non-negative, got n={n}, ndim={ndim}")
    return tuple(_index(np.arange(n)) for _ in range(ndim))


def diag_indices_from(arr: ArrayLike) -> tuple[Array, ...]:
    """Indices of the main diagonal of `arr`, whose dimensions must all be equal (at least 2 of them).

    Args:
      arr: an array of shape (n, n, ...).

    Returns:
      arr.ndim copies of arange(n).

    >>> enp.diag_indices_from(enp.zeros((2, 2)))
    (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    x = asarray(arr)
    shape = x.shape
    if len(shape) < 2:
        raise ShapeError(f"diag_indices_from: input array must be at least 2-d, got shape {shape}")
    if len(set(shape)) != 1:
        raise ShapeError(f"diag_indices_from: all dimensions of input must be of equal length, got shape {shape}")
    return follow("diag_indices_from", diag_indices(shape[0], len(shape)), x)  # on x's device, as JAX's full_like


def _triangle_indices(op: str, n, k, m, lower: bool) -> tuple[Array, Array]:
    n = _int(op, "n", n)
    k = _int(op, "k", k)
    m = n if m is None else _int(op, "m", m)
    if n < 0 or m < 0:
        raise InvalidArgumentError(f"{op}: n and m must be non-negative, got n={n}, m={m}")
    rows, cols = np.nonzero(np.tri(n, m, k, dtype=bool) if lower else ~np.tri(n, m, k - 1, dtype=bool))
    return _index(rows), _index(cols)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The (row, column) indices of the lower triangle (on and below the k-th diagonal) of an n x m array.

    Args:
      n: the number of rows.
      k: the diagonal offset (> 0 includes diagonals above the main one).
      m: the number of columns (default n).

    Returns:
      (rows, cols), default integers in row-major order.

    >>> [i.tolist() for i in enp.tril_indices(3)]
    [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    """
    return _triangle_indices("tril_indices", n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """The (row, column) indices of the upper triangle (on and above the k-th diagonal) of an n x m array.

    Args:
      n: the number of rows.
      k: the diagonal offset (> 0 leaves out diagonals from the main one up).
      m: the number of columns (default n).

    Returns:
      (rows, cols), default integers in row-major order.

    >>> [i.tolist() for i in enp.triu_indices(3, 1)]
    [[0, 0, 1], [1, 2, 2]]
    """
    return _triangle_indices("triu_indices", n, k, m, False)


def _from(op: str, arr) -> tuple[int, int]:
    shape = asarray(arr).shape
    if len(shape) != 2:
        raise ShapeError(f"{op}: input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """The indices of the lower triangle of the 2-d `arr` (see `tril_indices`).

    Args:
      arr: a 2-d array (only its shape is used).
      k: the diagonal offset.

    Returns:
      (rows, cols), default integers.

    >>> [i.tolist() for i in enp.tril_indices_from(enp.zeros((2, 3)))]
    [[0, 1, 1], [0, 0, 1]]
    """
    n, m = _from("tril_indices_from", arr)
    return follow("tril_indices_from", tril_indices(n, k, m), arr)


def triu_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Array, Array]:
    """The indices of the upper triangle of the 2-d `arr` (see `triu_indices`).

    Args:
      arr: a 2-d array (only its shape is used).
      k: the diagonal offset.

    Returns:
      (rows, cols), default integers.

    >>> [i.tolist() for i in enp.triu_indices_from(enp.zeros((2, 3)))]
    [[0, 0, 0, 1, 1], [0, 1, 2, 1, 2]]
    """
    n, m = _from("triu_indices_from", arr)
    return follow("triu_indices_from", triu_indices(n, k, m), arr)


# --- flat and multi-dimensional indices -------------------------------------------------------------


def _shape_arg(op: str, shape) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dims = tuple(_int(op, "shape", d) for d in dims)
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"{op}: dimensions must be non-negative, got {dims}")
    return dims


def unravel_index(indices: ArrayLike, shape: int | Sequence[int], order: str = "C") -> tuple[Array, ...]:
    """The coordinates in an array of `shape` of the flat `indices`.

    Args:
      indices: integer flat indices (any shape).
      shape: the array's shape.
      order: "C" (row-major) or "F" (column-major).

    Returns:
      One default-integer array of indices' shape per dimension. Concrete out-of-range indices
      raise, as in NumPy; traced ones are as in JAX: negative ones count from the end, and
      those out of range are clipped to [-size, size - 1] first.

    >>> enp.unravel_index(enp.asarray([5, 7]), (2, 4))
    (Array([1, 1], dtype=int32), Array([1, 3], dtype=int32))
    """
    if order not in ("C", "F"):
        raise InvalidArgumentError(f"unravel_index: order must be 'C' or 'F', got {order!r}")
    idx = asarray(indices)
    if not dtypes.is_integer(idx.dtype):
        raise DTypeError(f"unravel_index: indices must be integers, got {idx.dtype}{idx.shape}")
    dims = _shape_arg("unravel_index", shape)
    size = math.prod(dims)
    value = known(idx)
    if value is not None and value.size and (value.min() < 0 or value.max() >= size):
        bad = value.min() if value.min() < 0 else value.max()
        raise InvalidArgumentError(
            f"unravel_index: index {bad} is out of bounds for an array of shape {dims} (size {size})"
        )
    weak = idx.weak_type  # JAX: the coordinates of weak indices are weak
    idx = convert(idx, dtypes.default_int())  # in range below, so no value changes
    if size:
        idx = lax.clamp(lax.full((), -size, idx.dtype), idx, lax.full((), size - 1, idx.dtype))
        idx = where(idx < 0, idx + size, idx)
    out = []
    for d in reversed(dims) if order == "C" else dims:
        out.append(convert(lax.rem(idx, lax.full(idx.shape, max(d, 1), idx.dtype)), dtypes.default_int(), weak))
        idx = lax.div(idx, lax.full(idx.shape, max(d, 1), idx.dtype))
    return tuple(reversed(out)) if order == "C" else tuple(out)


def ravel_multi_index(multi_index: Sequence[ArrayLike], dims: Sequence[int], mode: str = "raise",
                      order: str = "C") -> Array:  # fmt: skip
    """The flat indices of coordinates into an array of shape `dims`.

    Args:
      multi_index: one integer array per dimension (they broadcast).
      dims: the array's shape.
      mode: "raise" (coordinates out of range are an error; this checks values, so traced
        coordinates need "wrap" or "clip", as in JAX), "wrap" (modulo the dimension) or "clip".
        One mode per dimension may be given as a tuple.
      order: "C" (row-major) or "F" (column-major).

    Returns:
      Default-integer flat indices of the broadcast shape.

    >>> enp.ravel_multi_index((enp.asarray([1, 0]), enp.asarray([3, 2])), (2, 4))
    Array([7, 2], dtype=int32)
    """
    from ember.numpy._ufuncs import clip, remainder

    dims = _shape_arg("ravel_multi_index", dims)
    if order not in ("C", "F"):
        raise InvalidArgumentError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    coords = [asarray(c) for c in multi_index]
    if len(coords) != len(dims):
        raise InvalidArgumentError(
            f"ravel_multi_index: {len(coords)} coordinate arrays for {len(dims)} dimensions {dims}"
        )
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if len(modes) != len(dims) or any(m not in ("raise", "wrap", "clip") for m in modes):
        raise InvalidArgumentError(
            f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip' (or one per dimension), got {mode!r}"
        )
    for c in coords:
        if not dtypes.is_integer(c.dtype):
            raise DTypeError(f"ravel_multi_index: coordinates must be integers, got {c.dtype}{c.shape}")
    coords = broadcast_arrays(*[convert(c, dtypes.default_int()) for c in coords])
    fixed = []
    for c, d, m in zip(coords, dims, modes):
        if m == "raise":
            value = known(c)
            if value is None:
                raise ConcretizationError(
                    f"ravel_multi_index: mode='raise' checks the values of the traced coordinates "
                    f"{c.aval.str_short()}; pass mode='wrap' or mode='clip' under jit and vmap"
                )
            if value.size and (value.min() < 0 or value.max() >= d):
                bad = value.min() if value.min() < 0 else value.max()
                raise InvalidArgumentError(
                    f"ravel_multi_index: invalid entry in coordinates array: {bad} is out of range for a dimension "
                    f"of size {d}"
                )
        elif m == "wrap":
            c = remainder(c, max(d, 1))
        else:
            c = clip(c, 0, max(d - 1, 0))
        fixed.append(c)
    order_dims = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat = None
    for i in order_dims:
        flat = fixed[i] if flat is None else flat * dims[i] + fixed[i]
    if flat is None:
        return lax.full((), 0, dtypes.default_int())
    return flat


def lexsort(keys: Sequence[ArrayLike] | ArrayLike, axis: int = -1) -> Array:
    """The indices that sort by several keys: the last key first, ties broken by the one before, ...

    The sort is stable; NaN sorts last and complex numbers by (real, imag), as `sort`.

    Args:
      keys: a sequence of arrays of one shape, or a 2-d (or more) array whose rows are the keys.
      axis: the axis to sort along.

    Returns:
      Default-integer indices of the keys' shape.

    >>> enp.lexsort((enp.asarray([1, 5, 1, 4]), enp.asarray([2, 1, 2, 1])))
    Array([3, 1, 0, 2], dtype=int32)
    """
    from ember.core.primitives._rules import normalize_axis

    if isinstance(keys, (Array, np.ndarray)):  # the rows are the keys
        arr = asarray(keys)
        if arr.ndim < 2:
            raise ShapeError(f"lexsort: an array of keys needs 2 or more dimensions (one key per row), got shape "
                             f"{arr.shape}; pass a single key as (key,)")  # fmt: skip
        ks = [arr[i] for i in range(arr.shape[0])]
    else:
        ks = [asarray(k) for k in keys]
    if not ks:
        raise InvalidArgumentError("lexsort: needs a sequence of at least one key")
    shape = ks[0].shape
    for k in ks:
        if k.shape != shape:
            raise ShapeError(f"lexsort: all keys need the same shape, got {[k.shape for k in ks]}")
    if not shape:
        raise ShapeError("lexsort: keys are 0-d; they need an axis to sort along")
    axis = normalize_axis("lexsort", _int("lexsort", "axis", axis), len(shape))
    index = lax.broadcasted_iota(dtypes.default_int(), shape, axis)
    return lax.sort((*reversed(ks), index), axis, True, len(ks))[-1]


# --- selection and comparisons --------------------------------------------------------------------------


def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: ArrayLike = 0) -> Array:
    """choicelist[i] where condlist[i] is the first true condition, else `default`, elementwise.

    Args:
      condlist: bool arrays.
      choicelist: arrays of values, one per condition; they broadcast with the conditions.
      default: the value where no condition holds.

    Returns:
      An array of the broadcast shape, in the promoted dtype of the choices and default.

    >>> x = enp.arange(6)
    >>> enp.select([x < 3, x > 4], [x, x ** 2], 42)
    Array([ 0,  1,  2, 42, 42, 25], dtype=int32)
    """
    conds, choices = list(condlist), list(choicelist)
    if len(conds) != len(choices):
        raise InvalidArgumentError(
            f"select: list of cases must be same length as list of conditions ({len(choices)} and {len(conds)})"
        )
    if not conds:
        raise InvalidArgumentError("select: select with an empty condition list is not possible")
    conds = [asarray(c) for c in conds]
    for i, c in enumerate(conds):
        if c.dtype != dtypes.bool_:
            raise DTypeError(f"select: invalid entry {i} in condlist: should be a bool array, got {c.dtype}{c.shape}")
    values = promote_args("select", *choices, default)
    shape = broadcast_shapes(*[c.shape for c in conds], *[v.shape for v in values])
    out = values[-1]
    for c, v in zip(reversed(conds), reversed(values[:-1])):
        out = where(c, v, out)
    from ember.numpy._shape import broadcast_to

    return broadcast_to(out, shape)


_COMPARE_ALL_LIMIT = 1 << 16


def isin(element: ArrayLike, test_elements: ArrayLike, assume_unique: bool = False, invert: bool = False, *,
         kind: str | None = None) -> Array:  # fmt: skip
    """Whether each value of `element` is among `test_elements` (==, so NaN is never found).

    Args:
      element: the values to look up (any shape).
      test_elements: the values to look for (flattened).
      assume_unique: accepted for NumPy compatibility.
      invert: return whether each value is NOT found.
      kind: None, "sort" (by sorting test_elements; O((N + M) log(N + M))) or "compare_all"
        (every pair; NumPy's "table" means the same here). None picks by size.

    Returns:
      A bool array of element's shape.

    >>> enp.isin(enp.asarray([[1, 2], [3, 4]]), enp.asarray([4, 1, 7])).tolist()
    [[True, False], [False, True]]
    """
    from ember.numpy._sorting import searchsorted, sort
    from ember.numpy._take import take

    if kind not in (None, "sort", "compare_all", "table"):
        raise InvalidArgumentError(f"isin: kind must be None, 'sort', 'compare_all' or 'table', got {kind!r}")
    x, t = promote_args("isin", element, test_elements)
    t = ravel(t)
    if t.size == 0:
        found = full_for("isin", x.shape, False, dtypes.bool_, x, t)
    elif kind == "sort" or (kind is None and x.size * t.size > _COMPARE_ALL_LIMIT):
        ordered = sort(t)
        at = lax.clamp(lax.full((), 0, dtypes.int32), searchsorted(ordered, x), lax.full((), t.size - 1, dtypes.int32))
        found = equal(take(ordered, at), x)
    else:
        pairs = equal(lax.broadcast_in_dim(x, (*x.shape, t.size), tuple(range(x.ndim))),
                      lax.broadcast_in_dim(t, (*x.shape, t.size), (x.ndim,)))  # fmt: skip
        found = _any(pairs, axis=-1)
    return logical_not(found) if invert else found


def allclose(a: ArrayLike, b: ArrayLike, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Array:
    """Whether every pair of elements is close (see `isclose`): a 0-d bool Array.

    Args:
      a, b: arrays that broadcast together.
      rtol, atol: the relative and absolute tolerances: |a - b| <= atol + rtol * |b|.
      equal_nan: count two NaNs as close.

    Returns:
      A 0-d bool Array (NumPy returns a Python bool; `bool(...)` gives one).

    >>> enp.allclose(enp.asarray([1.0, 2.0]), enp.asarray([1.0, 2.0000001]))
    Array(True, dtype=bool)
    """
    from ember.numpy._math import isclose

    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1: ArrayLike, a2: ArrayLike, equal_nan: bool = False) -> Array:
    """Whether two arrays have the same shape and elements: a 0-d bool Array.

    Args:
      a1, a2: the arrays.
      equal_nan: count NaN as equal to NaN (complex: a NaN in either part).

    Returns:
      A 0-d bool Array: False for different shapes.

    >>> enp.array_equal(enp.asarray([1, 2]), enp.asarray([1.0, 2.0]))
    Array(True, dtype=bool)
    """
    x, y = asarray(a1), asarray(a2)
    if x.shape != y.shape:
        return full_for("array_equal", (), False, dtypes.bool_, x, y)
    return _all(_equal(x, y, equal_nan))


def _equal(x: Array, y: Array, equal_nan: bool) -> Array:
    same = equal(x, y)
    if not equal_nan:
        return same
    x_nan, y_nan = isnan(x), isnan(y)
    return logical_or(logical_and(same, logical_not(logical_or(x_nan, y_nan))), logical_and(x_nan, y_nan))


def array_equiv(a1: ArrayLike, a2: ArrayLike) -> Array:
    """Whether two arrays broadcast together and are equal elementwise: a 0-d bool Array.

    Args:
      a1, a2: the arrays.

    Returns:
      A 0-d bool Array: False when the shapes do not broadcast.

    >>> enp.array_equiv(enp.asarray([1, 2]), enp.asarray([[1, 2], [1, 2]]))
    Array(True, dtype=bool)
    """
    x, y = asarray(a1), asarray(a2)
    try:
        broadcast_shapes(x.shape, y.shape)
    except ShapeError:
        return full_for("array_equiv", (), False, dtypes.bool_, x, y)
    return _all(equal(x, y))
