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
from ember.core.primitives._rules import FLOATING, NUMERIC, REAL, DTypes, check_axes, check_bools, check_dtype
from ember.errors import EmberError, InvalidArgumentError, ShapeError

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
    # JAX's rule gives both outputs the operand's weak type (the indices too)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32, x.weak_type)]


top_k_p.abstract_eval = _top_k_rule

# --- cumulative reductions ----------------------------------------------------------------------

def _cumulative(name: str, allowed: DTypes) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        check_dtype(name, x, allowed)
        if not x.shape:
            raise ShapeError(f"{name}: needs an operand with at least one dimension, got {describe(x)}")
        check_axes(name, (axis,), x.ndim)
        check_bools(name, reverse=reverse)
        return x

    prim.abstract_eval = rule
    return prim


cumsum_p = _cumulative("cumsum", NUMERIC)
cumprod_p = _cumulative("cumprod", NUMERIC)
cummax_p = _cumulative("cummax", NUMERIC)  # complex: lexicographic, as lax.max
cummin_p = _cumulative("cummin", NUMERIC)
# cumlogsumexp: out[i] = log(sum_{j <= i} exp(x[j])), computed without overflow.
cumlogsumexp_p = _cumulative("cumlogsumexp", FLOATING)

# --- differentiation rules ------------------------------------------------------------------
# Written with primitives only, so that they compose with every transform (grad of grad). A
# permutation is applied to a tangent by sorting the tangent as a payload behind constant keys;
# that sort is linear in its payloads, and its transpose sorts the cotangent back behind the
# permutation (a second sort, again linear in the payload). The scans' tangents solve the linear
# recurrence y[i] = a[i] y[i-1] + b[i], which is exact where x has zeros or ties.

import numpy as np

from ember.core.ad import Zero, deflinear, instantiate, is_undefined, zeros
from ember.core.array import wrap
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import structural as _st


def _iota_along(shape, dimension: int):
    dtype = dtypes.int32 if shape[dimension] < 2**31 else dtypes.int64
    return _st.iota_p.bind(dtype=dtype, shape=tuple(shape), dimension=dimension)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    # Every output is its operand permuted by the keys' sorting permutation, so each tangent is
    # permuted the same way: sorted as a payload behind the (constant) keys, by the same sort.
    params = {"dimension": dimension, "is_stable": is_stable, "num_keys": num_keys}
    ans = sort_p.bind(*primals, **params)
    live = [i for i, t in enumerate(tangents) if type(t) is not Zero and dtypes.is_inexact(primals[i].dtype)]
    out = [Zero(a.aval) for a in ans]
    if live:
        moved = sort_p.bind(*primals[:num_keys], *[instantiate(tangents[i]) for i in live], **params)[num_keys:]
        for i, t in zip(live, moved):
            out[i] = t
    return ans, out


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys):
    keys = operands[:num_keys]
    if any(is_undefined(k) for k in keys):
        raise EmberError("sort: not linear in its keys; only the operands after the keys can be transposed")
    out = [None] * len(operands)
    live = [i for i in range(num_keys, len(operands))
            if is_undefined(operands[i]) and type(cts[i]) is not Zero]  # fmt: skip
    if not live:
        return out
    # perm[j] is the operand position that lands at j; sorting the cotangent by perm sends it back.
    shape = keys[0].shape
    perm = sort_p.bind(*keys, _iota_along(shape, dimension), dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)[-1]  # fmt: skip
    back = sort_p.bind(perm, *[cts[i] for i in live], dimension=dimension, is_stable=False, num_keys=1)[1:]
    for i, ct in zip(live, back):
        out[i] = ct
    return out


sort_p.jvp = _sort_jvp
sort_p.transpose = _sort_transpose


def _top_k_jvp(primals, tangents, *, k):
    # top_k's order is the stable descending one (NaN largest, ties lower index first): the
    # reverse of a stable ascending sort of the reversed last axis. The tangent is carried through
    # that sort as a payload and cut to the first k.
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    last = x.ndim - 1
    flipped = _st.rev_p.bind(x, dimensions=(last,))
    carried = sort_p.bind(flipped, _st.rev_p.bind(t, dimensions=(last,)), dimension=last, is_stable=True, num_keys=1)[1]
    ordered = _st.rev_p.bind(carried, dimensions=(last,))
    tangent = _st.slice_p.bind(ordered, start_indices=(0,) * x.ndim, limit_indices=(*x.shape[:-1], k), strides=None)
    return [values, indices], [tangent, Zero(indices.aval)]


top_k_p.jvp = _top_k_jvp

deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum_p.bind(ct, axis=axis, reverse=not reverse)])


def _shift(v, axis: int, by: int, reverse: bool, fill):
    """v moved `by` places along `axis` (towards the end, or the start when `reverse`), `fill` coming in."""
    if by >= v.shape[axis]:  # nothing of v stays (and pad's kernel cannot crop more than the operand has)
        return _st.broadcast_in_dim_p.bind(_scalar(v, fill), shape=v.shape, broadcast_dimensions=())
    config = [(0, 0, 0)] * v.ndim
    config[axis] = (-by, by, 0) if reverse else (by, -by, 0)
    return _st.pad_p.bind(v, _scalar(v, fill), padding_config=tuple(config))


def _scalar(v, value):
    return wrap(np.asarray(value, dtype=v.dtype), v.weak_type)


def _linear_recurrence(a, b, axis: int, reverse: bool):
    """y with y[i] = a[i] y[i-1] + b[i] and y[-1] = 0 along `axis` (from the end when `reverse`).

    A log-depth doubling scan of affine maps: after the step with shift s, position i holds the
    composition over the window (i - 2s, i]. Linear in b; the coefficients come from `a` alone.
    """
    n = a.shape[axis]
    y, coef, s = b, a, 1
    while s < n:
        y = _ew.add_p.bind(y, _ew.mul_p.bind(coef, _shift(y, axis, s, reverse, 0)))
        if 2 * s < n:
            coef = _ew.mul_p.bind(coef, _shift(coef, axis, s, reverse, 1))
        s *= 2
    return y


def _cumprod_jvp(primals, tangents, *, axis, reverse):
    # d out[i] = x[i] d out[i-1] + out[i-1] t[i], with out[-1] = 1: no division by x.
    (x,), (t,) = primals, tangents
    ans = cumprod_p.bind(x, axis=axis, reverse=reverse)
    exclusive = _shift(ans, axis, 1, reverse, 1)
    return ans, _linear_recurrence(x, _ew.mul_p.bind(exclusive, t), axis, reverse)


def _cumulative_chooser_jvp(prim):
    # out[i] is x at the last position j <= i where x[j] == out[j] (a new running max/min; the
    # latest among ties, whose value is the primal's too), so the tangent is t there:
    # y[i] = t[i] where x[i] attains, else y[i-1].
    def jvp(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        attains = _bw.or_p.bind(_bw.eq_p.bind(x, ans), _bw.ne_p.bind(x, x))  # a NaN propagates from where it is
        hit = _ew.convert_element_type_p.bind(attains, new_dtype=t.dtype, weak_type=False)
        keep = _ew.sub_p.bind(_scalar(hit, 1), hit)
        return ans, _linear_recurrence(keep, _ew.mul_p.bind(hit, t), axis, reverse)

    return jvp


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse):
    # d out[i] = sum_{j <= i} t[j] exp(x[j] - out[i]) = y[i] with y[i] = a[i] y[i-1] + w[i] t[i],
    # w = exp(x - out) and a[i] = exp(out[i-1] - out[i]) (0 at the first): no factor exceeds 1.
    # A -inf in x (or a prefix of them in out) weighs 0, not exp(-inf - -inf).
    (x,), (t,) = primals, tangents
    ans = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    previous = _shift(ans, axis, 1, reverse, -np.inf)
    weight = _zero_at_minus_inf(x, _ew.exp_p.bind(_ew.sub_p.bind(x, ans)))
    decay = _zero_at_minus_inf(previous, _ew.exp_p.bind(_ew.sub_p.bind(previous, ans)))
    return ans, _linear_recurrence(decay, _ew.mul_p.bind(weight, t), axis, reverse)


def _zero_at_minus_inf(where, value):
    """`value`, with 0 where `where` is -inf."""
    return _ew.select_n_p.bind(_bw.eq_p.bind(where, _scalar(where, -np.inf)), value, zeros(value.aval))


cumprod_p.jvp = _cumprod_jvp
cummax_p.jvp = _cumulative_chooser_jvp(cummax_p)
cummin_p.jvp = _cumulative_chooser_jvp(cummin_p)
cumlogsumexp_p.jvp = _cumlogsumexp_jvp

__all__ = [n for n in dir() if n.endswith("_p")]

# --- batching rules ---------------------------------------------------------------------------
# The batch axis stays where it is (one common position for sort's operands) and the axis
# parameter shifts past it; top_k works on the last axis, so a batch axis there moves to the front.

from ember.core.batching import move_axis, not_mapped


def _broadcast_at(x, size: int, axis: int):
    """Unbatched `x` broadcast along a new batch axis at position `axis`."""
    shape = (*x.shape[:axis], size, *x.shape[axis:])
    kept = tuple(i if i < axis else i + 1 for i in range(x.ndim))
    return _st.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=kept)


def _sort_batch(size, args, dims, *, dimension, is_stable, num_keys):
    # Operands sorted together must share one shape: every operand gets its batch axis at the position
    # of the first batched operand's (unbatched ones are broadcast there).
    bd = next(d for d in dims if d is not not_mapped)
    operands = [_broadcast_at(x, size, bd) if d is not_mapped else move_axis(x, d, bd) for x, d in zip(args, dims)]
    out = sort_p.bind(*operands, dimension=dimension + (dimension >= bd), is_stable=is_stable, num_keys=num_keys)
    return out, [bd] * len(out)


def _top_k_batch(size, args, dims, *, k):
    (x,), (d,) = args, dims
    if d == x.ndim - 1:  # top_k works on the last axis: that must stay the example's
        x, d = move_axis(x, d, 0), 0
    return top_k_p.bind(x, k=k), [d, d]


def _cumulative_batch(prim):
    def batch(size, args, dims, *, axis, reverse):
        (x,), (d,) = args, dims
        return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d

    prim.batch = batch


sort_p.batch = _sort_batch
top_k_p.batch = _top_k_batch
for _prim in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    _cumulative_batch(_prim)
