"""Indexing primitives: gather, the scatter family, dynamic_slice, dynamic_update_slice.

`gather` and `scatter` follow XLA's general forms (the same dimension numbers
as JAX), general enough for all of NumPy's indexing: `ember.numpy` lowers
``x[idx]`` and ``x.at[idx].op(v)`` to them. Indices carry their index vector
in the last dimension.
"""

from __future__ import annotations

from typing import NamedTuple

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import ANY, DTypes, check_axes, check_dtype
from ember.errors import DTypeError, InvalidArgumentError, ShapeError

INDEX_DTYPES = DTypes("integer dtypes", dtypes.INTEGER)


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps index vectors to operand slices (XLA's GatherDimensionNumbers).

    offset_dims: output dimensions that hold the (uncollapsed) slice dimensions
    collapsed_slice_dims: operand dimensions of slice size 1 that are dropped
    start_index_map: operand dimension that each entry of an index vector indexes
    operand_batching_dims / start_indices_batching_dims: dimensions batched 1:1
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps updates into the operand (XLA's ScatterDimensionNumbers).

    update_window_dims: dimensions of `updates` that are window (slice) dimensions
    inserted_window_dims: operand dimensions of window size 1 absent from `updates`
    scatter_dims_to_operand_dims: operand dimension that each index-vector entry indexes
    operand_batching_dims / scatter_indices_batching_dims: dimensions batched 1:1
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode:
    """What happens to out-of-bounds indices.

    CLIP: clamp start indices so the slice fits; FILL_OR_DROP: gather returns the fill
    value, scatter drops the update; PROMISE_IN_BOUNDS: the caller promises (the NumPy
    backend clamps gathers and drops scatters, as JAX does on CPU).
    """

    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def parse(mode) -> str:
        if mode is None:
            return GatherScatterMode.PROMISE_IN_BOUNDS
        mode = str(mode).lower()
        aliases = {"drop": "fill", "fill": "fill", "clip": "clip", "promise_in_bounds": "promise_in_bounds"}
        if mode not in aliases:
            raise InvalidArgumentError(f"unknown indexing mode {mode!r}; use 'clip', 'fill' (or 'drop') or 'promise_in_bounds'")
        return aliases[mode]


def _check_indices(op: str, indices: ShapedArray) -> None:
    check_dtype(op, indices, INDEX_DTYPES, "indices")
    if indices.ndim < 1:
        raise ShapeError(f"{op}: indices must have at least one dimension (the index vector is the last), got {describe(indices)}")


# --- gather ------------------------------------------------------------------------------------

gather_p = Primitive("gather")


def _gather_rule(operand: ShapedArray, indices: ShapedArray, *, dimension_numbers: GatherDimensionNumbers,
                 slice_sizes, mode, fill_value=None, indices_are_sorted=False, unique_indices=False) -> ShapedArray:  # fmt: skip
    dn = dimension_numbers
    _check_indices("gather", indices)
    check_dtype("gather", operand, ANY)
    slice_sizes = tuple(slice_sizes)
    if len(slice_sizes) != operand.ndim:
        raise ShapeError(f"gather: slice_sizes {slice_sizes} needs one entry per dimension of operand {describe(operand)}")
    for d, (size, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= size <= n:
            raise ShapeError(f"gather: slice size {size} of dimension {d} does not fit operand {describe(operand)}")
    if indices.shape[-1] != len(dn.start_index_map):
        raise ShapeError(
            f"gather: the index vector has {indices.shape[-1]} entries (indices {describe(indices)}) but "
            f"start_index_map={dn.start_index_map} names {len(dn.start_index_map)} operand dimensions"
        )
    check_axes("gather", dn.start_index_map, operand.ndim)
    dropped = tuple(dn.collapsed_slice_dims) + tuple(dn.operand_batching_dims)
    check_axes("gather", dropped, operand.ndim)
    for d in dropped:
        if slice_sizes[d] > 1:
            raise ShapeError(f"gather: collapsed or batching dimension {d} must have slice size <= 1, got {slice_sizes[d]}")
    batch_shape = indices.shape[:-1]
    for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
        if operand.shape[od] != batch_shape[idd]:
            raise ShapeError(f"gather: operand batching dimension {od} ({operand.shape[od]}) and indices batching dimension "
                             f"{idd} ({batch_shape[idd]}) differ")  # fmt: skip
    offset_sizes = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    rank = len(batch_shape) + len(offset_sizes)
    if len(dn.offset_dims) != len(offset_sizes):
        raise ShapeError(f"gather: offset_dims={dn.offset_dims} must name {len(offset_sizes)} output dimensions")
    check_axes("gather", dn.offset_dims, rank)
    offsets, batches = iter(offset_sizes), iter(batch_shape)
    shape = tuple(next(offsets) if i in dn.offset_dims else next(batches) for i in range(rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


gather_p.abstract_eval = _gather_rule

# --- scatter --------------------------------------------------------------------------------------


def _scatter_rule(op: str, allowed: DTypes):
    def rule(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *, dimension_numbers: ScatterDimensionNumbers,
             mode, indices_are_sorted=False, unique_indices=False) -> ShapedArray:  # fmt: skip
        dn = dimension_numbers
        _check_indices(op, indices)
        check_dtype(op, operand, allowed)
        if updates.dtype != operand.dtype:
            raise DTypeError(f"{op}: updates {describe(updates)} must have the operand's dtype {operand.dtype}")
        if indices.shape[-1] != len(dn.scatter_dims_to_operand_dims):
            raise ShapeError(
                f"{op}: the index vector has {indices.shape[-1]} entries (indices {describe(indices)}) but "
                f"scatter_dims_to_operand_dims={dn.scatter_dims_to_operand_dims} names {len(dn.scatter_dims_to_operand_dims)}"
            )
        check_axes(op, dn.scatter_dims_to_operand_dims, operand.ndim)
        check_axes(op, tuple(dn.inserted_window_dims) + tuple(dn.operand_batching_dims), operand.ndim)
        check_axes(op, dn.update_window_dims, updates.ndim)
        window_operand_dims = [d for d in range(operand.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        if len(window_operand_dims) != len(dn.update_window_dims):
            raise ShapeError(f"{op}: update_window_dims={dn.update_window_dims} must name {len(window_operand_dims)} dimensions "
                             f"of updates {describe(updates)} (operand {describe(operand)})")  # fmt: skip
        for wd, od in zip(dn.update_window_dims, window_operand_dims):
            if updates.shape[wd] > operand.shape[od]:
                raise ShapeError(f"{op}: update window dimension {wd} ({updates.shape[wd]}) is larger than operand dimension "
                                 f"{od} ({operand.shape[od]})")  # fmt: skip
        scatter_shape = tuple(s for i, s in enumerate(updates.shape) if i not in dn.update_window_dims)
        if scatter_shape != indices.shape[:-1]:
            raise ShapeError(f"{op}: the scatter dimensions of updates {describe(updates)} are {scatter_shape}, but indices "
                             f"{describe(indices)} give {indices.shape[:-1]}")  # fmt: skip
        return operand

    return rule


scatter_p = Primitive("scatter")
scatter_add_p = Primitive("scatter_add")
scatter_mul_p = Primitive("scatter_mul")
scatter_min_p = Primitive("scatter_min")
scatter_max_p = Primitive("scatter_max")
scatter_p.abstract_eval = _scatter_rule("scatter", ANY)
scatter_add_p.abstract_eval = _scatter_rule("scatter_add", ANY)
scatter_mul_p.abstract_eval = _scatter_rule("scatter_mul", ANY)
_ORDERED = DTypes("real (non-complex) dtypes", dtypes.BOOL + dtypes.INTEGER + dtypes.FLOATING)
scatter_min_p.abstract_eval = _scatter_rule("scatter_min", _ORDERED)
scatter_max_p.abstract_eval = _scatter_rule("scatter_max", _ORDERED)

# --- dynamic slices ---------------------------------------------------------------------------------

# dynamic_slice(operand, *start_indices, slice_sizes): starts are scalars, clamped so the slice fits.
dynamic_slice_p = Primitive("dynamic_slice")


def _check_starts(op: str, operand: ShapedArray, starts) -> None:
    if len(starts) != operand.ndim:
        raise ShapeError(f"{op}: needs {operand.ndim} start indices for operand {describe(operand)}, got {len(starts)}")
    for s in starts:
        if s.shape != ():
            raise ShapeError(f"{op}: start indices must be scalars, got {describe(s)}")
        check_dtype(op, s, INDEX_DTYPES, "a start index")


def _dynamic_slice_rule(operand: ShapedArray, *starts: ShapedArray, slice_sizes) -> ShapedArray:
    _check_starts("dynamic_slice", operand, starts)
    slice_sizes = tuple(int(s) for s in slice_sizes)
    if len(slice_sizes) != operand.ndim or any(not 0 <= s <= n for s, n in zip(slice_sizes, operand.shape)):
        raise ShapeError(f"dynamic_slice: slice_sizes {slice_sizes} do not fit operand {describe(operand)}")
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_slice_p.abstract_eval = _dynamic_slice_rule

dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dynamic_update_slice_rule(operand: ShapedArray, update: ShapedArray, *starts: ShapedArray) -> ShapedArray:
    _check_starts("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype:
        raise DTypeError(f"dynamic_update_slice: update {describe(update)} must have the operand's dtype {operand.dtype}")
    if update.ndim != operand.ndim or any(u > n for u, n in zip(update.shape, operand.shape)):
        raise ShapeError(f"dynamic_update_slice: update {describe(update)} does not fit in operand {describe(operand)}")
    # JAX's standard rule: weak only when every operand is, the start indices included
    return ShapedArray(operand.shape, operand.dtype, all(a.weak_type for a in (operand, update, *starts)))


dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_rule

# --- differentiation rules ------------------------------------------------------------------
# As JAX's (jax/_src/lax/slicing.py). gather is linear in its operand and transposes to a
# scatter_add of the cotangent; scatter_add is linear in operand and updates, and the updates'
# cotangent is the inverse gather. scatter (set) finds the update that won each written element
# by scattering update ids (unless the indices are promised unique) and moves the tangents with
# a scatter_add; scatter_mul, scatter_min and scatter_max combine residuals with scatter_add, so
# only gather, scatter_add (and scatter_mul/scatter in their linear forms) need transposes. The
# dynamic slices transpose to each other. Index operands are integers: no tangent, no cotangent.
# Out-of-bounds handling of a transpose matches its forward's, as the NumPy backend implements
# the modes: gathers clamp unless mode is "fill" (fill value; the tangent there is 0), scatters
# clamp only in "clip" mode and drop otherwise. So a gather in "clip" or "promise_in_bounds" mode
# transposes to a "clip" scatter_add and one in "fill" mode to a dropping one; a scatter reads
# back with a "clip" gather in "clip" mode and with a "fill" gather (fill value 0) otherwise.

import math

import numpy as np

from ember.core.ad import Zero, broadcast_to, instantiate, is_undefined, zeros
from ember.core.array import wrap
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import structural as _st
from ember.errors import EmberError


def _gather_mode_for_scatter(mode: str) -> str:
    """The gather mode that reads back exactly the elements a scatter in `mode` writes."""
    return GatherScatterMode.CLIP if mode == GatherScatterMode.CLIP else GatherScatterMode.FILL_OR_DROP


def _scatter_mode_for_gather(mode: str) -> str:
    """The scatter mode that writes exactly the elements a gather in `mode` reads (fill: those in bounds)."""
    return GatherScatterMode.FILL_OR_DROP if mode == GatherScatterMode.FILL_OR_DROP else GatherScatterMode.CLIP


def _gather_dn_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather that reads back where a scatter with `dn` writes."""
    return GatherDimensionNumbers(*(tuple(field) for field in dn))


def _scatter_dn_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that writes where a gather with `dn` reads (the fields correspond one to one)."""
    return ScatterDimensionNumbers(*(tuple(field) for field in dn))


def _gather_or_zeros(operand, indices, *, slice_sizes, **params):
    """``gather_p.bind``, or zeros of its output's shape when a collapsed or batching dimension of `operand`
    is empty. The builders below ask for a slice of size 1 along such a dimension, which does not fit an
    empty one (XLA's gather rejects it too); no index vector can read anything there, so every element
    of the output (empty itself when the indices are) is out of bounds, and they all read 0 (as JAX's
    batching rule answers for an empty batch)."""
    sizes = tuple(slice_sizes)
    if all(s <= n for s, n in zip(sizes, operand.shape)):
        return gather_p.bind(operand, indices, slice_sizes=sizes, **params)
    fitted = tuple(min(s, n) for s, n in zip(sizes, operand.shape))  # only dropped dimensions differ: same shape
    return zeros(_gather_rule(operand.aval, indices.aval, slice_sizes=fitted, **params))


def _gather_back(x, indices, updates_shape, dn: ScatterDimensionNumbers, mode: str, unique_indices=False,
                 indices_are_sorted=False):  # fmt: skip
    """The gather that reads, for every element of a scatter's updates, the element of `x` (operand-shaped)
    it lands on; 0 for updates the scatter drops (all of them when an inserted dimension of `x` is empty)."""
    sizes, window = [], iter(dn.update_window_dims)
    for d in range(x.ndim):
        dropped = d in dn.inserted_window_dims or d in dn.operand_batching_dims
        sizes.append(1 if dropped else updates_shape[next(window)])
    return _gather_or_zeros(x, indices, dimension_numbers=_gather_dn_of(dn), slice_sizes=tuple(sizes),
                            mode=_gather_mode_for_scatter(mode), fill_value=0, indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices)  # fmt: skip


def _full(aval: ShapedArray, value):
    """`value` filled into `aval` (a broadcast scalar)."""
    scalar = wrap(np.asarray(value, dtype=aval.dtype), aval.weak_type)
    return scalar if aval.shape == () else _st.broadcast_in_dim_p.bind(scalar, shape=aval.shape, broadcast_dimensions=())


def _mask(keep, t):
    """`t` where `keep`, 0 elsewhere (linear in t)."""
    return _ew.select_n_p.bind(keep, zeros(t.aval), t)


def _eq(x, y):
    return _bw.eq_p.bind(x, y)


def _scatter_params(dimension_numbers, mode, indices_are_sorted, unique_indices) -> dict:
    return {"dimension_numbers": dimension_numbers, "mode": mode, "indices_are_sorted": indices_are_sorted,
            "unique_indices": unique_indices}  # fmt: skip


# gather: linear in the operand. Its tangent reads 0, not the fill value, out of bounds.


def _gather_jvp(primals, tangents, *, fill_value=None, **params):
    (operand, indices), (t, _) = primals, tangents
    ans = gather_p.bind(operand, indices, fill_value=fill_value, **params)
    if type(t) is Zero:
        return ans, Zero(ans.aval)
    return ans, gather_p.bind(t, indices, fill_value=0, **params)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value=None,
                      indices_are_sorted=False, unique_indices=False):  # fmt: skip
    if type(ct) is Zero or not is_undefined(operand):
        return [None, None]
    out = scatter_add_p.bind(zeros(operand.aval), indices, ct, dimension_numbers=_scatter_dn_of(dimension_numbers),
                             mode=_scatter_mode_for_gather(mode), indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices)  # fmt: skip
    return [out, None]


gather_p.jvp, gather_p.transpose = _gather_jvp, _gather_transpose

# scatter_add: linear in operand and updates.


def _scatter_add_jvp(primals, tangents, **params):
    (operand, indices, updates), (t_op, _, t_up) = primals, tangents
    ans = scatter_add_p.bind(operand, indices, updates, **params)
    if type(t_op) is Zero and type(t_up) is Zero:
        return ans, Zero(ans.aval)
    return ans, scatter_add_p.bind(instantiate(t_op), indices, instantiate(t_up), **params)


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted=False,
                           unique_indices=False):  # fmt: skip
    if type(ct) is Zero:
        return [None, None, None]
    ct_op = ct if is_undefined(operand) else None
    ct_up = None
    if is_undefined(updates):
        ct_up = _gather_back(ct, indices, updates.aval.shape, dimension_numbers, mode, unique_indices, indices_are_sorted)
    return [ct_op, None, ct_up]


scatter_add_p.jvp, scatter_add_p.transpose = _scatter_add_jvp, _scatter_add_transpose

# scatter (set): with unique indices it is linear in (operand, updates) jointly; otherwise the
# tangent keeps the operand's where nothing was written and each winning update's elsewhere.


def _scatter_ids(updates, dn: ScatterDimensionNumbers):
    """Ids 1, 2, ... of the scatter's index vectors, broadcast over each update window (updates' shape)."""
    ids_shape = tuple(1 if i in dn.update_window_dims else n for i, n in enumerate(updates.shape))
    count = math.prod(ids_shape)
    dtype = dtypes.int32 if count < 2**31 - 1 else dtypes.int64
    ids = _ew.add_p.bind(_st.iota_p.bind(dtype=dtype, shape=(count,), dimension=0), _full(ShapedArray((), dtype, True), 1))
    ids = _st.reshape_p.bind(ids, new_sizes=ids_shape, dimensions=None)
    return broadcast_to(ids, tuple(updates.shape))


def _scatter_jvp(primals, tangents, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False):
    (operand, indices, updates), (t_op, _, t_up) = primals, tangents
    params = _scatter_params(dimension_numbers, mode, indices_are_sorted, unique_indices)
    ans = scatter_p.bind(operand, indices, updates, **params)
    if type(t_op) is Zero and type(t_up) is Zero:
        return ans, Zero(ans.aval)
    if unique_indices:
        return ans, scatter_p.bind(instantiate(t_op), indices, instantiate(t_up), **params)
    if updates.size == 0:  # nothing is written (and a zero-size operand has no element to gather back)
        return ans, instantiate(t_op)
    ids = _scatter_ids(updates, dimension_numbers)
    written = scatter_p.bind(zeros(ShapedArray(operand.shape, ids.dtype, False)), indices, ids, **params)
    winners = _gather_back(written, indices, updates.shape, dimension_numbers, mode)
    kept = _eq(written, zeros(written.aval))  # operand elements no update overwrote
    won = _eq(winners, ids)  # the updates that were written last
    t_op = zeros(operand.aval) if type(t_op) is Zero else _mask(kept, t_op)
    t_up = zeros(updates.aval) if type(t_up) is Zero else _mask(won, t_up)
    return ans, scatter_add_p.bind(t_op, indices, t_up, **params)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted=False,
                       unique_indices=False):  # fmt: skip
    if not unique_indices:
        raise EmberError("scatter: transposable only with unique_indices=True (which duplicate update wins is the "
                         "backend's choice, as in JAX); differentiate it with ember.grad/vjp instead, or use scatter_add")
    if type(ct) is Zero:
        return [None, None, None]
    params = _scatter_params(dimension_numbers, mode, indices_are_sorted, unique_indices)
    ct_op = scatter_p.bind(ct, indices, zeros(updates.aval), **params) if is_undefined(operand) else None
    ct_up = None
    if is_undefined(updates):
        ct_up = _gather_back(ct, indices, updates.aval.shape, dimension_numbers, mode, unique_indices, indices_are_sorted)
    return [ct_op, None, ct_up]


scatter_p.jvp, scatter_p.transpose = _scatter_jvp, _scatter_transpose

# scatter_mul: out = operand * (the product of the updates landing on each element). The
# updates' part is operand * scatter_add(t * the product of the *other* updates at the same
# element). That product is computed without dividing by zero, and so that its own derivative
# (grad of grad) is right at zero factors too: (the product of the other nonzero factors) times
# 1 when no other factor is zero, the other zero factor when one is (0, with its tangent), and
# 0 when more are (its first derivative is 0 too).


def _product_of_others(operand, indices, updates, dimension_numbers, mode, params):
    def at_each_update(values, combine, init):
        total = combine.bind(_full(operand.aval, init), indices, values, **params)
        return _gather_back(total, indices, updates.shape, dimension_numbers, mode)

    is_zero = _eq(updates, zeros(updates.aval))
    one = _full(updates.aval, 1)
    nonzero = _ew.select_n_p.bind(is_zero, updates, one)  # the zero factors read as 1 (tangent 0)
    nonzero_others = _ew.div_p.bind(at_each_update(nonzero, scatter_mul_p, 1), nonzero)
    zeros_others = _ew.sub_p.bind(at_each_update(_mask(is_zero, one), scatter_add_p, 0), _mask(is_zero, one))
    zero_others = _ew.sub_p.bind(at_each_update(_mask(is_zero, updates), scatter_add_p, 0), _mask(is_zero, updates))
    zero_factor = _ew.select_n_p.bind(_eq(zeros_others, zeros(zeros_others.aval)),
                                      _mask(_eq(zeros_others, one), zero_others), one)  # fmt: skip
    return _ew.mul_p.bind(nonzero_others, zero_factor)


def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False):
    (operand, indices, updates), (t_op, _, t_up) = primals, tangents
    params = _scatter_params(dimension_numbers, mode, indices_are_sorted, unique_indices)
    ans = scatter_mul_p.bind(operand, indices, updates, **params)
    if type(t_op) is Zero and type(t_up) is Zero:
        return ans, Zero(ans.aval)
    out = None
    if type(t_op) is not Zero:
        out = scatter_mul_p.bind(t_op, indices, updates, **params)
    if type(t_up) is not Zero:
        if not unique_indices:
            t_up = _ew.mul_p.bind(t_up, _product_of_others(operand, indices, updates, dimension_numbers, mode, params))
        part = _ew.mul_p.bind(operand, scatter_add_p.bind(zeros(operand.aval), indices, t_up, **params))
        out = part if out is None else _ew.add_p.bind(out, part)
    return ans, out


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted=False,
                           unique_indices=False):  # fmt: skip
    if is_undefined(updates):
        raise EmberError("scatter_mul: not linear in its updates; its transpose takes the operand's cotangent only")
    if type(ct) is Zero or not is_undefined(operand):
        return [None, None, None]
    return [scatter_mul_p.bind(ct, indices, updates, dimension_numbers=dimension_numbers, mode=mode,
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices), None, None]  # fmt: skip


scatter_mul_p.jvp, scatter_mul_p.transpose = _scatter_mul_jvp, _scatter_mul_transpose

# scatter_min / scatter_max: each output element's tangent is the mean of the tangents of the
# values that attain it (the operand's and the updates' there), as JAX's (ties share evenly).


def _scatter_extremum_jvp(prim):
    def jvp(primals, tangents, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False):
        (operand, indices, updates), (t_op, _, t_up) = primals, tangents
        params = _scatter_params(dimension_numbers, mode, indices_are_sorted, unique_indices)
        ans = prim.bind(operand, indices, updates, **params)
        if type(t_op) is Zero and type(t_up) is Zero:
            return ans, Zero(ans.aval)
        kept = _eq(operand, ans)
        won = _eq(updates, _gather_back(ans, indices, updates.shape, dimension_numbers, mode))
        one_op, one_up = _full(operand.aval, 1), _full(updates.aval, 1)
        count = scatter_add_p.bind(_mask(kept, one_op), indices, _mask(won, one_up), **params)
        count = _ew.max_p.bind(count, one_op)  # 0 only where the result is NaN
        t_op = zeros(operand.aval) if type(t_op) is Zero else _mask(kept, t_op)
        t_up = zeros(updates.aval) if type(t_up) is Zero else _mask(won, t_up)
        return ans, _ew.div_p.bind(scatter_add_p.bind(t_op, indices, t_up, **params), count)

    return jvp


scatter_min_p.jvp = _scatter_extremum_jvp(scatter_min_p)
scatter_max_p.jvp = _scatter_extremum_jvp(scatter_max_p)

# dynamic_slice and dynamic_update_slice: linear in the operand (and the update); both clamp
# their starts the same way, so each one's transpose is the other.


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    (operand, *starts), (t, *_) = primals, tangents
    ans = dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
    if type(t) is Zero:
        return ans, Zero(ans.aval)
    return ans, dynamic_slice_p.bind(t, *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
    if type(ct) is Zero or not is_undefined(operand):
        return [None] * (1 + len(starts))
    return [dynamic_update_slice_p.bind(zeros(operand.aval), ct, *starts)] + [None] * len(starts)


def _dynamic_update_slice_jvp(primals, tangents):
    (operand, update, *starts), (t_op, t_up, *_) = primals, tangents
    ans = dynamic_update_slice_p.bind(operand, update, *starts)
    if type(t_op) is Zero and type(t_up) is Zero:
        return ans, Zero(ans.aval)
    return ans, dynamic_update_slice_p.bind(instantiate(t_op), instantiate(t_up), *starts)


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
    if type(ct) is Zero:
        return [None] * (2 + len(starts))
    ct_op = dynamic_update_slice_p.bind(ct, zeros(update.aval), *starts) if is_undefined(operand) else None
    ct_up = dynamic_slice_p.bind(ct, *starts, slice_sizes=tuple(update.aval.shape)) if is_undefined(update) else None
    return [ct_op, ct_up] + [None] * len(starts)


dynamic_slice_p.jvp, dynamic_slice_p.transpose = _dynamic_slice_jvp, _dynamic_slice_transpose
dynamic_update_slice_p.jvp, dynamic_update_slice_p.transpose = _dynamic_update_slice_jvp, _dynamic_update_slice_transpose

# --- batching rules ---------------------------------------------------------------------------
# As JAX's (jax/_src/lax/slicing.py), written with ember's own batching dimension numbers. The batch
# axis goes first in every operand that has one. Operand batched only: it becomes a full-size offset
# (window) dimension of the slice, indexed by nothing. Indices batched only: it is one more batch
# dimension of the indices (and of the output). Both: the operand's batch axis and the indices' are
# paired as operand_batching_dims / start_indices_batching_dims, so each example's indices read (or
# write) only its own operand. None of these touches the start_index_map / scatter_dims_to_operand_dims
# dimensions, so the out-of-bounds modes (clip, fill, drop) clamp or drop exactly what each example's
# call would. A scatter's output is per example whenever anything is batched, so an unbatched operand
# (or updates, which must cover the batch window) is broadcast first: not in vain. The order of the
# updates within each example is kept, so duplicate indices resolve (scatter) or accumulate as in
# the example's own call. dynamic_slice / dynamic_update_slice with the same starts for every example
# stay dynamic slices (start 0, full size along the batch axis); with per-example starts they become
# a gather / scatter whose index vectors are the starts, in clip mode, which clamps like they do.

from ember.core.batching import bdim_to_front, move_axis, not_mapped, shift_axes


def _gather_batch(size, args, dims, *, dimension_numbers, slice_sizes, mode, fill_value=None, indices_are_sorted=False,
                  unique_indices=False):  # fmt: skip
    (operand, indices), (d_op, d_ix) = args, dims
    dn = dimension_numbers
    if d_ix is not_mapped:
        operand = move_axis(operand, d_op, 0)
        numbers = GatherDimensionNumbers(
            offset_dims=(0, *shift_axes(dn.offset_dims)), collapsed_slice_dims=shift_axes(dn.collapsed_slice_dims),
            start_index_map=shift_axes(dn.start_index_map), operand_batching_dims=shift_axes(dn.operand_batching_dims),
            start_indices_batching_dims=tuple(dn.start_indices_batching_dims))  # fmt: skip
        out = gather_p.bind(operand, indices, dimension_numbers=numbers, slice_sizes=(size, *slice_sizes), mode=mode,
                            fill_value=fill_value, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)  # fmt: skip
        return out, 0
    indices = move_axis(indices, d_ix, 0)
    if d_op is not_mapped:
        # Several examples may read the same element: the batched indices are neither unique nor sorted.
        numbers = GatherDimensionNumbers(
            offset_dims=shift_axes(dn.offset_dims), collapsed_slice_dims=tuple(dn.collapsed_slice_dims),
            start_index_map=tuple(dn.start_index_map), operand_batching_dims=tuple(dn.operand_batching_dims),
            start_indices_batching_dims=shift_axes(dn.start_indices_batching_dims))  # fmt: skip
        out = gather_p.bind(operand, indices, dimension_numbers=numbers, slice_sizes=tuple(slice_sizes), mode=mode,
                            fill_value=fill_value, indices_are_sorted=False, unique_indices=False)  # fmt: skip
        return out, 0
    operand = move_axis(operand, d_op, 0)
    numbers = GatherDimensionNumbers(
        offset_dims=shift_axes(dn.offset_dims), collapsed_slice_dims=shift_axes(dn.collapsed_slice_dims),
        start_index_map=shift_axes(dn.start_index_map), operand_batching_dims=(0, *shift_axes(dn.operand_batching_dims)),
        start_indices_batching_dims=(0, *shift_axes(dn.start_indices_batching_dims)))  # fmt: skip
    # An empty batch: zeros of the (empty) output, as the size-1 slice along the batch axis does not fit.
    out = _gather_or_zeros(operand, indices, dimension_numbers=numbers, slice_sizes=(1, *slice_sizes), mode=mode,
                           fill_value=fill_value, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)  # fmt: skip
    return out, 0


def _scatter_batch(prim):
    def batch(size, args, dims, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False):
        (operand, indices, updates), (d_op, d_ix, d_up) = args, dims
        dn = dimension_numbers
        operand = bdim_to_front(operand, d_op, size)
        updates = bdim_to_front(updates, d_up, size)
        if d_ix is not_mapped:
            numbers = ScatterDimensionNumbers(
                update_window_dims=(0, *shift_axes(dn.update_window_dims)),
                inserted_window_dims=shift_axes(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=shift_axes(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=shift_axes(dn.operand_batching_dims),
                scatter_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))  # fmt: skip
        else:
            indices = move_axis(indices, d_ix, 0)
            numbers = ScatterDimensionNumbers(
                update_window_dims=shift_axes(dn.update_window_dims),
                inserted_window_dims=shift_axes(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=shift_axes(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0, *shift_axes(dn.operand_batching_dims)),
                scatter_indices_batching_dims=(0, *shift_axes(dn.scatter_indices_batching_dims)))  # fmt: skip
        out = prim.bind(operand, indices, updates, dimension_numbers=numbers, mode=mode,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)  # fmt: skip
        return out, 0

    return batch


def _start_dtype(starts) -> np.dtype:
    dtype = starts[0].dtype
    for s in starts[1:]:
        dtype = np.promote_types(dtype, s.dtype)
    return dtype if dtypes.is_integer(dtype) else np.dtype(np.int64)  # uint64 with a signed type


def _batched_starts(size, starts, dims):
    """The starts as index vectors, one per example: an int array of shape (size, len(starts))."""
    dtype = _start_dtype(starts)
    columns = []
    for s, d in zip(starts, dims):
        if s.dtype != dtype:
            s = _ew.convert_element_type_p.bind(s, new_dtype=dtype, weak_type=False)
        columns.append(_st.broadcast_in_dim_p.bind(s, shape=(size, 1), broadcast_dimensions=() if d is not_mapped else (0,)))
    return columns[0] if len(columns) == 1 else _st.concatenate_p.bind(*columns, dimension=1)


def _zero_start(starts):
    return wrap(np.zeros((), starts[0].dtype))


def _dynamic_slice_batch(size, args, dims, *, slice_sizes):
    (operand, *starts), (d_op, *d_starts) = args, dims
    slice_sizes = tuple(slice_sizes)
    if all(d is not_mapped for d in d_starts):
        # The same window for every example: keep the batch axis where it is and take all of it.
        starts.insert(d_op, _zero_start(starts) if starts else wrap(np.zeros((), np.int32)))
        sizes = slice_sizes[:d_op] + (size,) + slice_sizes[d_op:]
        return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes), d_op
    indices = _batched_starts(size, starts, d_starts)
    n = len(starts)
    if d_op is not_mapped:
        numbers = GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                         start_index_map=tuple(range(n)))  # fmt: skip
        sizes = slice_sizes
    else:
        operand = move_axis(operand, d_op, 0)
        numbers = GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                         start_index_map=tuple(range(1, n + 1)), operand_batching_dims=(0,),
                                         start_indices_batching_dims=(0,))  # fmt: skip
        sizes = (1, *slice_sizes)
    out = _gather_or_zeros(operand, indices, dimension_numbers=numbers, slice_sizes=sizes, mode=GatherScatterMode.CLIP,
                           fill_value=None, indices_are_sorted=False, unique_indices=False)  # fmt: skip
    return out, 0


def _dynamic_update_slice_batch(size, args, dims):
    (operand, update, *starts), (d_op, d_up, *d_starts) = args, dims
    operand = bdim_to_front(operand, d_op, size)
    update = bdim_to_front(update, d_up, size)
    if all(d is not_mapped for d in d_starts):
        zero = _zero_start(starts) if starts else wrap(np.zeros((), np.int32))
        return dynamic_update_slice_p.bind(operand, update, zero, *starts), 0
    indices = _batched_starts(size, starts, d_starts)
    n = len(starts)
    # One window per example, in its own operand: the index vectors are unique.
    numbers = ScatterDimensionNumbers(update_window_dims=tuple(range(1, n + 1)), inserted_window_dims=(),
                                      scatter_dims_to_operand_dims=tuple(range(1, n + 1)), operand_batching_dims=(0,),
                                      scatter_indices_batching_dims=(0,))  # fmt: skip
    out = scatter_p.bind(operand, indices, update, dimension_numbers=numbers, mode=GatherScatterMode.CLIP,
                         indices_are_sorted=True, unique_indices=True)  # fmt: skip
    return out, 0


gather_p.batch = _gather_batch
for _prim in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    _prim.batch = _scatter_batch(_prim)
dynamic_slice_p.batch = _dynamic_slice_batch
dynamic_update_slice_p.batch = _dynamic_update_slice_batch

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "dynamic_slice_p",
    "dynamic_update_slice_p",
    "gather_p",
    "scatter_add_p",
    "scatter_max_p",
    "scatter_min_p",
    "scatter_mul_p",
    "scatter_p",
]  # fmt: skip
