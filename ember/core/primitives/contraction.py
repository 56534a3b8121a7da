"""dot_general: batched tensor contraction, the one primitive under matmul, dot and einsum."""

from __future__ import annotations

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import check_axes, check_same_dtypes
from ember.errors import InvalidArgumentError, ShapeError

# dot_general(lhs, rhs, dimension_numbers=((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)),
#             preferred_element_type=None): output dims are batch, lhs free, rhs free.
dot_general_p = Primitive("dot_general")


def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers, precision=None,
                      preferred_element_type=None) -> ShapedArray:  # fmt: skip
    (lc, rc), (lb, rb) = dimension_numbers
    dtype = check_same_dtypes("dot_general", (lhs, rhs))
    check_axes("dot_general", tuple(lc) + tuple(lb), lhs.ndim)
    check_axes("dot_general", tuple(rc) + tuple(rb), rhs.ndim)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise InvalidArgumentError(f"dot_general: dimension_numbers {dimension_numbers} pair unequal numbers of axes")
    for kind, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        for a, b in zip(ld, rd):
            if lhs.shape[a] != rhs.shape[b]:
                raise ShapeError(
                    f"dot_general: {kind} dimension {a} of lhs {describe(lhs)} has size {lhs.shape[a]} "
                    f"but dimension {b} of rhs {describe(rhs)} has size {rhs.shape[b]}"
                )
    batch = tuple(lhs.shape[a] for a in lb)
    lfree = tuple(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb)
    out_dtype = dtype if preferred_element_type is None else dtypes.to_dtype(preferred_element_type)
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(batch + lfree + rfree, out_dtype, weak)


dot_general_p.abstract_eval = _dot_general_rule


# --- differentiation rules ------------------------------------------------------------------
# dot_general is bilinear: d(l . r) = dl . r + l . dr, and each transpose is another
# dot_general of the cotangent with the other operand, followed by a transpose (as JAX's).

from ember.core.ad import defjvp, is_undefined


def _remaining(n: int, *removed) -> list[int]:
    gone = {a for group in removed for a in group}
    return [i for i in range(n) if i not in gone]


def _to_dtype(x, dtype):
    if x.dtype == dtype:
        return x
    from ember.core.primitives.elementwise import convert_element_type_p

    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


def _transpose_lhs(ct, x_aval, y, dimension_numbers, precision, swap_ans=False):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(len(x_aval.shape), x_contract, x_batch)
    y_kept = _remaining(y.ndim, y_contract, y_batch)
    nb = len(x_batch)
    if swap_ans:
        ans_y = range(nb, nb + len(y_kept))
    else:
        ans_y = range(nb + len(x_kept), nb + len(x_kept) + len(y_kept))
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(range(nb)), tuple(y_batch)))
    x_contract_by_y = [x_contract[i] for i in sorted(range(len(y_contract)), key=lambda i: y_contract[i])]
    order = list(x_batch) + x_kept + x_contract_by_y
    out_axes = tuple(sorted(range(len(order)), key=lambda i: order[i]))
    ct = _to_dtype(ct, y.dtype)
    x_bar = dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision, preferred_element_type=None)
    return _to_dtype(_transpose_axes(x_bar, out_axes), x_aval.dtype)


def _transpose_axes(x, permutation):
    from ember.core.primitives.structural import transpose_p

    return x if permutation == tuple(range(x.ndim)) else transpose_p.bind(x, permutation=permutation)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    ct_lhs = _transpose_lhs(ct, lhs.aval, rhs, dimension_numbers, precision) if is_undefined(lhs) else None
    swapped = ((rc, lc), (rb, lb))
    ct_rhs = _transpose_lhs(ct, rhs.aval, lhs, swapped, precision, swap_ans=True) if is_undefined(rhs) else None
    return [ct_lhs, ct_rhs]


defjvp(dot_general_p,
       lambda t, ans, lhs, rhs, **params: dot_general_p.bind(t, rhs, **params),
       lambda t, ans, lhs, rhs, **params: dot_general_p.bind(lhs, t, **params))  # fmt: skip
dot_general_p.transpose = _dot_general_transpose


# --- batching rule ----------------------------------------------------------------------------
# Both operands batched: the batch axis becomes a dot_general batch dimension. One batched: it is a
# free dimension of that operand, and the output says where it landed. Nothing is broadcast.

from ember.core.batching import move_axis, not_mapped, shift_axes  # noqa: E402


def _dot_general_batch(size, args, dims, *, dimension_numbers, **params):
    (lhs, rhs), (dl, dr) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    if dl is not not_mapped and dr is not not_mapped:
        lhs, rhs = move_axis(lhs, dl, 0), move_axis(rhs, dr, 0)
        numbers = ((shift_axes(lc), shift_axes(rc)), ((0, *shift_axes(lb)), (0, *shift_axes(rb))))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, **params), 0
    if dl is not not_mapped:
        lhs = move_axis(lhs, dl, 0)
        numbers = ((shift_axes(lc), tuple(rc)), (shift_axes(lb), tuple(rb)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, **params), len(lb)
    rhs = move_axis(rhs, dr, 0)
    numbers = ((tuple(lc), shift_axes(rc)), (tuple(lb), shift_axes(rb)))
    lhs_free = lhs.ndim - len(lc) - len(lb)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, **params), len(lb) + lhs_free


dot_general_p.batch = _dot_general_batch
