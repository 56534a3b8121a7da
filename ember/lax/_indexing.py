"""lax's indexing functions: gather, scatter*, dynamic slices and their in-dim helpers."""

from __future__ import annotations

from collections.abc import Sequence

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import indexing as ix
from ember.core.primitives._rules import normalize_axis
from ember.errors import EmberIndexError
from ember.lax._convert import convert, operands
from ember.lax._structural import ArrayLike, reshape, squeeze
from ember.lax._structural import slice_in_dim as _static_slice_in_dim

GatherDimensionNumbers = ix.GatherDimensionNumbers
ScatterDimensionNumbers = ix.ScatterDimensionNumbers
GatherScatterMode = ix.GatherScatterMode


def _index_operand(op: str, x) -> Array:
    (x,) = operands(op, (x,))
    if x.dtype == dtypes.bool_:
        x = convert(x, dtypes.int32)
    return x


def gather(operand: ArrayLike, start_indices: ArrayLike, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, indices_are_sorted: bool = False, unique_indices: bool = False,
           mode=None, fill_value=None) -> Array:  # fmt: skip
    """XLA's Gather: one slice of `slice_sizes` per index vector (the last axis of `start_indices`).

    >>> dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    >>> lax.gather(enp.arange(5.0), enp.asarray([[3], [1]]), dn, (1,))
    Array([3., 1.], dtype=float32)
    """
    (x,) = operands("gather", (operand,))
    indices = _index_operand("gather", start_indices)
    dn = GatherDimensionNumbers(*(tuple(int(a) for a in field) for field in dimension_numbers))
    return ix.gather_p.bind(x, indices, dimension_numbers=dn, slice_sizes=tuple(int(s) for s in slice_sizes),
                            mode=GatherScatterMode.parse(mode), fill_value=fill_value,
                            indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices))  # fmt: skip


def _scatter(prim, name: str):
    def fn(operand: ArrayLike, scatter_indices: ArrayLike, updates: ArrayLike, dimension_numbers: ScatterDimensionNumbers,
           *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None) -> Array:  # fmt: skip
        x, u = operands(name, (operand, updates))
        indices = _index_operand(name, scatter_indices)
        dn = ScatterDimensionNumbers(*(tuple(int(a) for a in field) for field in dimension_numbers))
        return prim.bind(x, indices, u, dimension_numbers=dn, mode=GatherScatterMode.parse(mode),
                         indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices))  # fmt: skip

    # The example writes 1 twice at index 1 of zeros.
    _SCATTERED = {"scatter": 1, "scatter_add": 2, "scatter_mul": 0, "scatter_min": 0, "scatter_max": 1}
    verb = {"scatter": "writes", "scatter_add": "adds", "scatter_mul": "multiplies in", "scatter_min": "takes the minimum with",
            "scatter_max": "takes the maximum with"}[name]  # fmt: skip
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"XLA's Scatter: {verb} `updates` at the windows the index vectors select"
        + (" (duplicates accumulate)." if name != "scatter" else " (with duplicates, one update wins).")
        + "\n\nOut-of-bounds windows are dropped unless mode='clip'.\n\n"
        f">>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))\n"
        f">>> lax.{name}(enp.zeros(4), enp.asarray([[1], [1]]), enp.ones(2), dn)\n"
        f"Array([0., {_SCATTERED[name]}., 0., 0.], dtype=float32)\n"
    )
    return fn


scatter = _scatter(ix.scatter_p, "scatter")
scatter_add = _scatter(ix.scatter_add_p, "scatter_add")
scatter_mul = _scatter(ix.scatter_mul_p, "scatter_mul")
scatter_min = _scatter(ix.scatter_min_p, "scatter_min")
scatter_max = _scatter(ix.scatter_max_p, "scatter_max")


def _starts(op: str, starts) -> list[Array]:
    out = []
    for s in starts:
        (s,) = operands(op, (s,))
        if not dtypes.is_integer(s.dtype):
            raise dtypes.DTypeError(f"{op}: start indices must be integers, got {s.dtype}")
        out.append(convert(s, dtypes.int32) if s.dtype != dtypes.int32 and s.dtype.itemsize < 4 else s)
    return out


def dynamic_slice(operand: ArrayLike, start_indices: Sequence[ArrayLike], slice_sizes: Sequence[int]) -> Array:
    """operand[start:start + size] per dimension with run-time starts, clamped so the slice fits.

    >>> lax.dynamic_slice(enp.arange(10), (enp.asarray(8),), (4,))
    Array([6, 7, 8, 9], dtype=int32)
    """
    (x,) = operands("dynamic_slice", (operand,))
    return ix.dynamic_slice_p.bind(x, *_starts("dynamic_slice", start_indices), slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand: ArrayLike, update: ArrayLike, start_indices: Sequence[ArrayLike]) -> Array:
    """`operand` with `update` written at run-time `start_indices` (clamped so it fits).

    >>> lax.dynamic_update_slice(enp.zeros(5), enp.ones(2), (enp.asarray(1),))
    Array([0., 1., 1., 0., 0.], dtype=float32)
    """
    x, u = operands("dynamic_update_slice", (operand, update))
    return ix.dynamic_update_slice_p.bind(x, u, *_starts("dynamic_update_slice", start_indices))


def dynamic_slice_in_dim(operand: ArrayLike, start_index: ArrayLike, slice_size: int, axis: int = 0) -> Array:
    """`dynamic_slice` along one axis.

    >>> lax.dynamic_slice_in_dim(enp.arange(10), 3, 2)
    Array([3, 4], dtype=int32)
    """
    (x,) = operands("dynamic_slice_in_dim", (operand,))
    axis = normalize_axis("dynamic_slice_in_dim", axis, x.ndim)
    starts = [0] * x.ndim
    starts[axis] = start_index
    sizes = list(x.shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(operand: ArrayLike, index: ArrayLike, axis: int = 0, keepdims: bool = True) -> Array:
    """The slice at run-time `index` along `axis` (that axis dropped unless keepdims).

    >>> lax.dynamic_index_in_dim(enp.arange(6).reshape(2, 3), 1, keepdims=False)
    Array([3, 4, 5], dtype=int32)
    """
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand: ArrayLike, update: ArrayLike, start_index: ArrayLike, axis: int) -> Array:
    """`dynamic_update_slice` along one axis.

    >>> lax.dynamic_update_slice_in_dim(enp.zeros(5), enp.ones(2), 3, 0)
    Array([0., 0., 0., 1., 1.], dtype=float32)
    """
    (x,) = operands("dynamic_update_slice_in_dim", (operand,))
    axis = normalize_axis("dynamic_update_slice_in_dim", axis, x.ndim)
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(operand: ArrayLike, update: ArrayLike, index: ArrayLike, axis: int) -> Array:
    """Write `update` (without the `axis` dimension) at run-time `index` along `axis`.

    >>> lax.dynamic_update_index_in_dim(enp.zeros((2, 3)), enp.ones(3), 1, 0)
    Array([[0., 0., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    (x, u) = operands("dynamic_update_index_in_dim", (operand, update))
    axis = normalize_axis("dynamic_update_index_in_dim", axis, x.ndim)
    if u.ndim == x.ndim - 1:
        u = reshape(u, u.shape[:axis] + (1,) + u.shape[axis:])
    return dynamic_update_slice_in_dim(x, u, index, axis)


def index_in_dim(operand: ArrayLike, index: int, axis: int = 0, keepdims: bool = True) -> Array:
    """The slice at static `index` along `axis` (that axis dropped unless keepdims).

    >>> lax.index_in_dim(enp.arange(6).reshape(2, 3), 1, keepdims=False)
    Array([3, 4, 5], dtype=int32)
    """
    (x,) = operands("index_in_dim", (operand,))
    axis = normalize_axis("index_in_dim", axis, x.ndim)
    n = x.shape[axis]
    if not -n <= index < n:
        raise EmberIndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} with size {n} (operand shape "
                              f"{x.shape}); use lax.dynamic_index_in_dim, which clamps, for indices that may fall outside")
    index %= n
    out = _static_slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))
