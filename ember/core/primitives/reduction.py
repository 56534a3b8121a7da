"""Reductions over static axes: sum, prod, max, min, and, or, argmax, argmin."""

from __future__ import annotations

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import BOOL_OR_INT, NUMERIC, REAL, DTypes, check_axes, check_dtype
from ember.errors import DTypeError, ShapeError


def _reducer(name: str, allowed: DTypes, keeps_weak: bool = True) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axes) -> ShapedArray:
        check_dtype(name, x, allowed)
        axes = check_axes(name, axes, x.ndim)
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in axes), x.dtype, keeps_weak and x.weak_type)

    prim.abstract_eval = rule
    return prim


reduce_sum_p = _reducer("reduce_sum", NUMERIC)
reduce_prod_p = _reducer("reduce_prod", NUMERIC)
reduce_max_p = _reducer("reduce_max", REAL)  # empty reductions give -inf / the dtype's minimum
reduce_min_p = _reducer("reduce_min", REAL)
# As JAX's, the logical reductions give strong results (their weak-type rule strips it).
reduce_and_p = _reducer("reduce_and", BOOL_OR_INT, keeps_weak=False)
reduce_or_p = _reducer("reduce_or", BOOL_OR_INT, keeps_weak=False)


def _arg_reducer(name: str) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axes, index_dtype) -> ShapedArray:
        check_dtype(name, x, REAL)
        axes = check_axes(name, axes, x.ndim)
        if len(axes) != 1:
            raise ShapeError(f"{name}: reduces exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            raise ShapeError(f"{name}: cannot take {name} of an empty axis {axes[0]} of {describe(x)}")
        index_dtype = dtypes.to_dtype(index_dtype)
        if not dtypes.is_integer(index_dtype):
            raise DTypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i != axes[0]), index_dtype, False)

    prim.abstract_eval = rule
    return prim


argmax_p = _arg_reducer("argmax")
argmin_p = _arg_reducer("argmin")


# --- differentiation rules ------------------------------------------------------------------

from ember.core.ad import deflinear, defnondiff
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import sorting as _so
from ember.core.primitives import structural as _st


def _kept(ndim: int, axes) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def _expand_back(y, x_shape, axes):
    """A reduction's result broadcast back over the reduced axes."""
    return _st.broadcast_in_dim_p.bind(y, shape=tuple(x_shape), broadcast_dimensions=_kept(len(x_shape), axes))


deflinear(reduce_sum_p, lambda ct, x, *, axes: [_expand_back(ct, x.aval.shape, axes)])


def _chooser_jvp(prim):
    # The tangent of the max (min) is the mean of the tangents where x attains it (JAX's rule).
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        hits = _ew.convert_element_type_p.bind(_bw.eq_p.bind(x, _expand_back(ans, x.shape, axes)), new_dtype=x.dtype, weak_type=False)
        counts = _ew._where_zero(reduce_sum_p.bind(hits, axes=axes), 1)  # empty reductions: tangent 0
        return ans, _ew.div_p.bind(reduce_sum_p.bind(_ew.mul_p.bind(t, hits), axes=axes), counts)

    return jvp


reduce_max_p.jvp = _chooser_jvp(reduce_max_p)
reduce_min_p.jvp = _chooser_jvp(reduce_min_p)


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod(x) = sum_i t_i prod_{j != i} x_j; the products of the others come from exclusive
    # cumulative products from both ends, which stay right when some x_j are zero.
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    axes = tuple(axes)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if not axes or n <= 1:
        return ans, reduce_sum_p.bind(t, axes=axes) if axes else t
    kept = _kept(x.ndim, axes)
    flat_shape = tuple(x.shape[i] for i in kept) + (n,)

    def flatten(v):
        v = _st.transpose_p.bind(v, permutation=kept + axes)
        return _st.reshape_p.bind(v, new_sizes=flat_shape, dimensions=None)

    xf, last = flatten(x), len(flat_shape) - 1

    def part(lo, hi):
        return _st.slice_p.bind(xf, start_indices=(0,) * last + (lo,), limit_indices=flat_shape[:-1] + (hi,), strides=None)

    one = _st.broadcast_in_dim_p.bind(_ew._const(x, 1), shape=flat_shape[:-1] + (1,), broadcast_dimensions=())
    left = _st.concatenate_p.bind(one, _so.cumprod_p.bind(part(0, n - 1), axis=last, reverse=False), dimension=last)
    right = _st.concatenate_p.bind(_so.cumprod_p.bind(part(1, n), axis=last, reverse=True), one, dimension=last)
    others = _ew.mul_p.bind(left, right)
    return ans, reduce_sum_p.bind(_ew.mul_p.bind(flatten(t), others), axes=(last,))


reduce_prod_p.jvp = _reduce_prod_jvp
defnondiff(reduce_and_p, reduce_or_p, argmax_p, argmin_p)

__all__ = [n for n in dir() if n.endswith("_p")]

# --- batching rules: the batch axis goes first, reduced axes shift past it ----------------------

from ember.core.batching import move_axis, shift_axes  # noqa: E402


def _reducer_batch(prim):
    def batch(size, args, dims, *, axes, **params):
        return prim.bind(move_axis(args[0], dims[0], 0), axes=shift_axes(axes), **params), 0

    prim.batch = batch


for _prim in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, argmax_p, argmin_p):
    _reducer_batch(_prim)
