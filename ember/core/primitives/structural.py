"""Structural primitives: shapes, layouts, slicing, padding, iota.

Parameters are static and already normalised (non-negative axes, tuples);
the `ember.lax` wrappers accept the friendlier forms.
"""

from __future__ import annotations

import math

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import PRIMITIVES, Primitive
from ember.core.primitives._rules import check_axes, check_same_dtypes
from ember.errors import InvalidArgumentError, ShapeError


def _shape_param(op: str, shape) -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise InvalidArgumentError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ShapeError(f"{op}: negative dimension in shape {shape}")
    return shape


# --- iota ------------------------------------------------------------------------------

iota_p = Primitive("iota")


def _iota_rule(*, dtype, shape, dimension) -> ShapedArray:
    shape = _shape_param("iota", shape)
    check_axes("iota", (dimension,), len(shape))
    dtype = dtypes.to_dtype(dtype)
    if dtype == dtypes.bool_:
        raise InvalidArgumentError("iota: dtype bool is not countable; use an integer or float dtype")
    return ShapedArray(shape, dtype, False)


iota_p.abstract_eval = _iota_rule

# --- broadcast_in_dim ----------------------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


def _broadcast_in_dim_rule(x: ShapedArray, *, shape, broadcast_dimensions) -> ShapedArray:
    shape = _shape_param("broadcast_in_dim", shape)
    dims = tuple(broadcast_dimensions)
    if len(dims) != x.ndim:
        raise ShapeError(
            f"broadcast_in_dim: operand {describe(x)} has rank {x.ndim} but broadcast_dimensions={dims} has {len(dims)} entries"
        )
    check_axes("broadcast_in_dim", dims, len(shape))
    if any(b <= a for a, b in zip(dims, dims[1:])):
        raise InvalidArgumentError(f"broadcast_in_dim: broadcast_dimensions must be strictly increasing, got {dims}")
    for size, d in zip(x.shape, dims):
        if size not in (1, shape[d]):
            raise ShapeError(
                f"broadcast_in_dim: operand dimension of size {size} cannot broadcast to size {shape[d]} "
                f"(operand {describe(x)}, target shape {shape}, broadcast_dimensions={dims})"
            )
    return ShapedArray(shape, x.dtype, x.weak_type)


broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_rule

# --- reshape, transpose, squeeze, expand_dims, rev ------------------------------------------

reshape_p = Primitive("reshape")


def _reshape_rule(x: ShapedArray, *, new_sizes, dimensions=None) -> ShapedArray:
    new_sizes = _shape_param("reshape", new_sizes)
    if math.prod(new_sizes) != x.size:
        raise ShapeError(
            f"reshape: cannot reshape {describe(x)} ({x.size} elements) to {new_sizes} ({math.prod(new_sizes)} elements)"
        )
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise InvalidArgumentError(f"reshape: dimensions={dimensions} is not a permutation of range({x.ndim})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p.abstract_eval = _reshape_rule

transpose_p = Primitive("transpose")


def _transpose_rule(x: ShapedArray, *, permutation) -> ShapedArray:
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise InvalidArgumentError(f"transpose: permutation {perm} is not a permutation of the axes of {describe(x)}")
    return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype, x.weak_type)


transpose_p.abstract_eval = _transpose_rule

squeeze_p = Primitive("squeeze")


def _squeeze_rule(x: ShapedArray, *, dimensions) -> ShapedArray:
    dims = check_axes("squeeze", dimensions, x.ndim)
    for d in dims:
        if x.shape[d] != 1:
            raise ShapeError(f"squeeze: dimension {d} of {describe(x)} has size {x.shape[d]}, not 1")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dims), x.dtype, x.weak_type)


squeeze_p.abstract_eval = _squeeze_rule

expand_dims_p = Primitive("expand_dims")


def _expand_dims_rule(x: ShapedArray, *, dimensions) -> ShapedArray:
    ndim = x.ndim + len(dimensions)
    dims = check_axes("expand_dims", dimensions, ndim)
    sizes = iter(x.shape)
    return ShapedArray(tuple(1 if i in dims else next(sizes) for i in range(ndim)), x.dtype, x.weak_type)


expand_dims_p.abstract_eval = _expand_dims_rule

rev_p = Primitive("rev")


def _rev_rule(x: ShapedArray, *, dimensions) -> ShapedArray:
    check_axes("rev", dimensions, x.ndim)
    return x


rev_p.abstract_eval = _rev_rule

# --- concatenate, pad, slice --------------------------------------------------------------------

concatenate_p = Primitive("concatenate")


def _concatenate_rule(*xs: ShapedArray, dimension: int) -> ShapedArray:
    if not xs:
        raise InvalidArgumentError("concatenate: needs at least one operand")
    dtype = check_same_dtypes("concatenate", xs)
    check_axes("concatenate", (dimension,), xs[0].ndim)
    for x in xs[1:]:
        if x.ndim != xs[0].ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != dimension):
            shown = ", ".join(describe(x) for x in xs)
            raise ShapeError(f"concatenate: operands must match except along dimension {dimension}, got {shown}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), dtype, all(x.weak_type for x in xs))


concatenate_p.abstract_eval = _concatenate_rule

# pad(x, padding_value, padding_config): per dimension (low, high, interior); low/high may be negative (crop).
pad_p = Primitive("pad")


def _pad_rule(x: ShapedArray, padding_value: ShapedArray, *, padding_config) -> ShapedArray:
    check_same_dtypes("pad", (x, padding_value))
    if padding_value.shape != ():
        raise ShapeError(f"pad: padding_value must be a scalar, got {describe(padding_value)}")
    if len(padding_config) != x.ndim:
        raise ShapeError(f"pad: padding_config has {len(padding_config)} entries for {describe(x)} of rank {x.ndim}")
    shape = []
    for size, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise InvalidArgumentError(f"pad: interior padding must be >= 0, got {interior} in {padding_config}")
        out = lo + hi + size + max(size - 1, 0) * interior
        if out < 0:
            raise ShapeError(f"pad: padding_config {padding_config} crops {describe(x)} to a negative size")
        shape.append(out)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


pad_p.abstract_eval = _pad_rule

slice_p = Primitive("slice")


def _slice_rule(x: ShapedArray, *, start_indices, limit_indices, strides=None) -> ShapedArray:
    strides = strides or (1,) * x.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise ShapeError(
            f"slice: start_indices {start_indices}, limit_indices {limit_indices} and strides {strides} "
            f"must each have one entry per dimension of {describe(x)}"
        )
    shape = []
    for size, lo, hi, step in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= lo <= hi <= size or step < 1:
            raise InvalidArgumentError(
                f"slice: start {start_indices}, limit {limit_indices}, strides {strides} out of bounds for {describe(x)} "
                "(need 0 <= start <= limit <= size and stride >= 1)"
            )
        shape.append(-(-(hi - lo) // step))
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


slice_p.abstract_eval = _slice_rule


# --- differentiation rules ------------------------------------------------------------------
# All of these primitives are linear: their jvp applies them to the tangents (core/ad.py's
# `deflinear`), and the transposes below move the cotangent back to the operand's layout.

from ember.core.ad import deflinear, is_undefined


def _zero_scalar(x):
    import numpy as np

    from ember.core.array import wrap

    return wrap(np.zeros((), x.dtype), x.weak_type)


# Structural is the lowest family (elementwise, sorting and reduction build on it): rules here that need
# their primitives (sub, reduce_sum, select_n) look them up by name when they run, importing no family.
def _reduce_sum(x, axes):
    return PRIMITIVES["reduce_sum"].bind(x, axes=tuple(axes)) if axes else x


def _reshape_to(x, shape):
    return x if x.shape == tuple(shape) else reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    added = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    stretched = [d for i, d in enumerate(broadcast_dimensions) if in_shape[i] == 1 and shape[d] != 1]
    return [_reshape_to(_reduce_sum(ct, sorted(added + stretched)), in_shape)]


def _reshape_transpose(ct, x, *, new_sizes, dimensions):
    if dimensions is None:
        return [_reshape_to(ct, x.aval.shape)]
    # reshape with `dimensions` first transposes the operand by them
    moved = tuple(x.aval.shape[d] for d in dimensions)
    inverse = tuple(sorted(range(len(dimensions)), key=lambda i: dimensions[i]))
    return [transpose_p.bind(_reshape_to(ct, moved), permutation=inverse)]


def _concatenate_transpose(ct, *xs, dimension):
    out, start = [], 0
    for x in xs:
        size = x.aval.shape[dimension]
        if is_undefined(x):
            lo = [0] * ct.ndim
            hi = list(ct.shape)
            lo[dimension], hi[dimension] = start, start + size
            out.append(slice_p.bind(ct, start_indices=tuple(lo), limit_indices=tuple(hi), strides=None))
        else:
            out.append(None)
        start += size
    return out


def _pad_transpose(ct, x, padding_value, *, padding_config):
    # The operand's cotangent: crop the edges (negative padding), then take every (interior + 1)-th
    # element. The padding value's: everything else, i.e. the total minus the operand's part.
    unpadded = pad_p.bind(ct, _zero_scalar(ct), padding_config=tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    ct_x = slice_p.bind(unpadded, start_indices=(0,) * ct.ndim, limit_indices=unpadded.shape,
                        strides=tuple(interior + 1 for _, _, interior in padding_config))  # fmt: skip
    ct_value = None
    if is_undefined(padding_value):
        everything = tuple(range(ct.ndim))
        ct_value = PRIMITIVES["sub"].bind(_reduce_sum(ct, everything), _reduce_sum(ct_x, everything))
    return [ct_x if is_undefined(x) else None, ct_value]


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides=None):
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    config = []
    for size, lo, n, step in zip(shape, start_indices, ct.shape, strides):
        covered = 0 if n == 0 else 1 + (n - 1) * step  # operand elements from the first to the last taken
        config.append((lo, size - lo - covered, step - 1))
    return [pad_p.bind(ct, _zero_scalar(ct), padding_config=tuple(config))]


deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
deflinear(reshape_p, _reshape_transpose)
deflinear(transpose_p, lambda ct, x, *, permutation: [
    transpose_p.bind(ct, permutation=tuple(sorted(range(len(permutation)), key=lambda i: permutation[i])))])  # fmt: skip
deflinear(squeeze_p, lambda ct, x, *, dimensions: [_reshape_to(ct, x.aval.shape)])
deflinear(expand_dims_p, lambda ct, x, *, dimensions: [_reshape_to(ct, x.aval.shape)])
deflinear(rev_p, lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
deflinear(concatenate_p, _concatenate_transpose)
deflinear(pad_p, _pad_transpose)
deflinear(slice_p, _slice_transpose)


# --- batching rules ---------------------------------------------------------------------------
# The batch axis goes first and every axis parameter shifts by one.

from ember.core.batching import batch_at_front, bdim_to_front, move_axis, not_mapped, shift_axes  # noqa: E402


def _front(x, d):
    return move_axis(x, d, 0)


def _broadcast_in_dim_batch(size, args, dims, *, shape, broadcast_dimensions):
    x = _front(args[0], dims[0])
    return broadcast_in_dim_p.bind(x, shape=(size, *shape), broadcast_dimensions=(0, *shift_axes(broadcast_dimensions))), 0


def _reshape_batch(size, args, dims, *, new_sizes, dimensions):
    x = _front(args[0], dims[0])
    if dimensions is not None:
        x = transpose_p.bind(x, permutation=(0, *shift_axes(dimensions)))
    return reshape_p.bind(x, new_sizes=(size, *new_sizes), dimensions=None), 0


broadcast_in_dim_p.batch = _broadcast_in_dim_batch
reshape_p.batch = _reshape_batch
transpose_p.batch = lambda size, args, dims, *, permutation: (
    transpose_p.bind(_front(args[0], dims[0]), permutation=(0, *shift_axes(permutation))), 0)
squeeze_p.batch = lambda size, args, dims, *, dimensions: (
    squeeze_p.bind(_front(args[0], dims[0]), dimensions=shift_axes(dimensions)), 0)
expand_dims_p.batch = lambda size, args, dims, *, dimensions: (
    expand_dims_p.bind(_front(args[0], dims[0]), dimensions=shift_axes(dimensions)), 0)
rev_p.batch = lambda size, args, dims, *, dimensions: (rev_p.bind(_front(args[0], dims[0]), dimensions=shift_axes(dimensions)), 0)
concatenate_p.batch = batch_at_front(lambda size, args, *, dimension: (concatenate_p.bind(*args, dimension=dimension + 1), 0))
slice_p.batch = lambda size, args, dims, *, start_indices, limit_indices, strides=None: (
    slice_p.bind(_front(args[0], dims[0]), start_indices=(0, *start_indices), limit_indices=(size, *limit_indices),
                 strides=None if strides is None else (1, *strides)), 0)


def _pad_batch(size, args, dims, *, padding_config):
    (x, value), (dx, dv) = args, dims
    config = ((0, 0, 0), *padding_config)
    if dv is not_mapped:
        return pad_p.bind(bdim_to_front(x, dx, size), value, padding_config=config), 0
    # A padding value per example: pad with anything, then choose the value where the padding is.
    import numpy as np

    from ember.core.array import wrap

    x = bdim_to_front(x, dx, size)
    padded = pad_p.bind(x, _zero_scalar(x), padding_config=config)
    inside = pad_p.bind(wrap(np.ones(x.shape[1:], np.bool_)), wrap(np.zeros((), np.bool_)), padding_config=padding_config)
    inside = broadcast_in_dim_p.bind(inside, shape=padded.shape, broadcast_dimensions=tuple(range(1, padded.ndim)))
    values = broadcast_in_dim_p.bind(_front(value, dv), shape=padded.shape, broadcast_dimensions=(0,))
    return PRIMITIVES["select_n"].bind(inside, values, padded), 0


pad_p.batch = _pad_batch
