"""Sorting and scans: sort (several operands by their first keys), top_k, and the cumulative reductions.

Parameters are static and already normalised (non-negative `dimension` /
`axis`, plain ints and bools); the `ember.lax` wrappers accept the friendlier
forms. Orderings are total, as in JAX: NaN sorts after +inf, -0.0 ties with
0.0, and complex numbers compare lexicographically by (real, imag).
"""

from __future__ import annotations

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import FLOATING, NUMERIC, REAL, DTypes, check_axes, check_dtype
from ember.errors import InvalidArgumentError, ShapeError

# --- sort ------------------------------------------------------------------------------------

# sort(*operands, dimension, is_stable, num_keys): every operand reordered by the permutation
# that sorts the first `num_keys` operands lexicographically (operand 0 most significant).
sort_p = Primitive("sort", multiple_results=True)


def _sort_rule(*operands: ShapedArray, dimension: int, is_stable: bool, num_keys: int) -> list[ShapedArray]:
    if not operands:
        raise InvalidArgumentError("sort: needs at least one operand")
    shape = operands[0].shape
    if any(x.shape != shape for x in operands[1:]):
        shown = ", ".join(describe(x) for x in operands)
        raise ShapeError(f"sort: operands sorted together must share one shape, got {shown}")
    if not isinstance(num_keys, int) or not 1 <= num_keys <= len(operands):
        raise InvalidArgumentError(
            f"sort: num_keys must be an int from 1 to the number of operands ({len(operands)}), got {num_keys!r}"
        )
    if not shape:
        raise ShapeError(f"sort: cannot sort a 0-d operand {describe(operands[0])}; reshape it to 1-d first")
    check_axes("sort", (dimension,), len(shape))
    return list(operands)


sort_p.abstract_eval = _sort_rule

# --- top_k -------------------------------------------------------------------------------------

# top_k(x, k): the k largest entries along the last axis, descending (NaN counts as the largest;
# ties keep the lower index first), and their int32 indices.
top_k_p = Primitive("top_k", multiple_results=True)


def _top_k_rule(x: ShapedArray, *, k: int) -> list[ShapedArray]:
    check_dtype("top_k", x, REAL)
    if not x.shape:
        raise ShapeError(f"top_k: the operand must have at least one dimension, got {describe(x)}")
    if not isinstance(k, int) or not 0 <= k <= x.shape[-1]:
        raise InvalidArgumentError(
            f"top_k: k must be an int from 0 to the size of the last axis ({x.shape[-1]}) of {describe(x)}, got {k!r}"
        )
    shape = (*x.shape[:-1], k)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32, False)]


top_k_p.abstract_eval = _top_k_rule

# --- cumulative reductions ----------------------------------------------------------------------

def _cumulative(name: str, allowed: DTypes) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        check_dtype(name, x, allowed)
        if not x.shape:
            raise ShapeError(f"{name}: needs an operand with at least one dimension, got {describe(x)}")
        check_axes(name, (axis,), x.ndim)
        if not isinstance(reverse, bool):
            raise InvalidArgumentError(f"{name}: reverse must be a bool, got {reverse!r}")
        return x

    prim.abstract_eval = rule
    return prim


cumsum_p = _cumulative("cumsum", NUMERIC)
cumprod_p = _cumulative("cumprod", NUMERIC)
cummax_p = _cumulative("cummax", NUMERIC)  # complex: lexicographic, as lax.max
cummin_p = _cumulative("cummin", NUMERIC)
# cumlogsumexp: out[i] = log(sum_{j <= i} exp(x[j])), computed without overflow.
cumlogsumexp_p = _cumulative("cumlogsumexp", FLOATING)

__all__ = [n for n in dir() if n.endswith("_p")]
