"""Reductions over static axes: sum, prod, max, min, and, or, argmax, argmin."""

from __future__ import annotations

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import BOOL_OR_INT, NUMERIC, REAL, DTypes, check_axes, check_dtype
from ember.errors import DTypeError, ShapeError


def _reducer(name: str, allowed: DTypes) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axes) -> ShapedArray:
        check_dtype(name, x, allowed)
        axes = check_axes(name, axes, x.ndim)
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in axes), x.dtype, x.weak_type)

    prim.abstract_eval = rule
    return prim


reduce_sum_p = _reducer("reduce_sum", NUMERIC)
reduce_prod_p = _reducer("reduce_prod", NUMERIC)
reduce_max_p = _reducer("reduce_max", REAL)  # empty reductions give -inf / the dtype's minimum
reduce_min_p = _reducer("reduce_min", REAL)
reduce_and_p = _reducer("reduce_and", BOOL_OR_INT)
reduce_or_p = _reducer("reduce_or", BOOL_OR_INT)


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

__all__ = [n for n in dir() if n.endswith("_p")]
