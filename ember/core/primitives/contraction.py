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
