"""Collectives over a named vmap axis: psum, pmean, pmax, pmin, all_gather, axis_index (psum_scatter,
ppermute and all_to_all: collective_exchange.py).

Inside ``vmap(f, axis_name="i")`` the examples of axis "i" can see each other:
``psum(x, "i")`` is, in every example, the sum of `x` over all the examples. As
in JAX, a collective refers to its axis by name, so nested vmaps with different
names each reduce over their own axis (the innermost vmap of that name wins).

How they run: a collective's `bind` looks up the active batching trace whose
`axis_name` matches (outside such a vmap, a name bound to the processes makes it
an ordinary primitive whose kernel communicates; any other name is unbound and
`bind` raises `UnboundAxisNameError`). Operands that the trace does
not own yet (constants, values of enclosing transforms) are lifted into it as
unmapped values, so ``psum(1, "i")`` is the axis size. The batching trace then
calls the primitive's axis rule (`ember.core.batching.axis_rules`) for every
collective, mapped operands or not: under the trace of that name the rule
reduces over the batch axis (the result is the same for every example:
unmapped); under a vmap of another name it applies the collective to its
per-example values and keeps that trace's batch axis where it is.

Transforms above the vmap (jvp, linearize, staging) see an ordinary primitive:
psum and pmean are linear and their own transposes (as in JAX), pmax/pmin
differentiate through the examples that attain the extremum, all_gather
transposes to psum_scatter (the sum over the examples, this example's slice),
and axis_index is an integer with no derivative.
"""

from __future__ import annotations

from typing import Any

from ember.backends import communicators as _communicators
from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.ad import Zero, deflinear, defnondiff, instantiate
from ember.core.batching import axis_rules, bdim_to_front, move_axis, not_mapped
from ember.core.primitive import PRIMITIVES, Primitive, Trace, find_top_trace, trace_stack
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import reduction as _rd
from ember.core.primitives import structural as _st
from ember.core.primitives._rules import ANY, NUMERIC, REAL, DTypes, check_dtype
from ember.errors import InvalidArgumentError, UnboundAxisNameError

__all__ = ["Collective", "all_gather_p", "axis_frame", "axis_index_p", "pmax_p", "pmean_p", "pmin_p", "psum_p"]


def _bound_names(stack: list[Trace]) -> list[Any]:
    return [t.axis_name for t in stack if getattr(t, "axis_name", None) is not None]


def axis_frame(axis_name: Any, op: str) -> Any:
    """The innermost active batching trace named `axis_name`, else the processes' communicator bound to
    that name by `ember.distributed.initialize` (raises `UnboundAxisNameError` when neither is)."""
    stack = trace_stack()
    if axis_name is not None:
        for trace in reversed(stack):
            if getattr(trace, "axis_name", None) == axis_name:
                return trace
        if axis_name in _communicators.bound:
            return _communicators.bound[axis_name]
    bound = _bound_names(stack) + [name for name in _communicators.bound if name is not None]
    if axis_name is None:
        raise UnboundAxisNameError(f"{op}: unbound axis name None: a collective needs the name of a vmap axis; give the vmap "
                                   "one (vmap(f, axis_name='i')) and pass it here")  # fmt: skip
    known = f"the names bound here are {', '.join(map(repr, bound))}" if bound else "no named axis is bound here"
    raise UnboundAxisNameError(
        f"{op}: unbound axis name {axis_name!r}: collectives work inside vmap(f, axis_name={axis_name!r}), on the "
        f"axis of that name ({known}); wrap the function in such a vmap, or fix the name"
    )


class Collective(Primitive):
    """A primitive that reduces over (or indexes) the named axis given by its `axis_name` parameter."""

    __slots__ = ()

    def bind(self, *args: Any, axis_name: Any, **params: Any):
        stack = trace_stack()
        frame = axis_frame(axis_name, self.name)
        self.abstract_eval(*[x.aval for x in args], axis_name=axis_name, **params)  # ember's own shape/dtype errors
        params = {"axis_name": axis_name, **params}
        if frame.level < 0:
            # Bound to the processes: an ordinary primitive, seen by every transform here; its kernel
            # communicates.
            return Primitive.bind(self, *args, **params)
        top = find_top_trace(args, stack)
        if top is None or top.level < frame.level:
            # Nothing above the named trace is involved: hand the collective to it directly, the operands
            # lifted into it (unmapped when it does not own them yet).
            return frame.process_primitive(self, [frame.full_raise(x) for x in args], params)
        return Primitive.bind(self, *args, **params)


def _same_shape_rule(name: str, allowed: DTypes):
    def rule(x: ShapedArray, *, axis_name) -> ShapedArray:
        check_dtype(name, x, allowed)
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return rule


psum_p = Collective("psum")
psum_p.abstract_eval = _same_shape_rule("psum", NUMERIC)
pmean_p = Collective("pmean")
pmean_p.abstract_eval = _same_shape_rule("pmean", NUMERIC)
pmax_p = Collective("pmax")
pmax_p.abstract_eval = _same_shape_rule("pmax", REAL)
pmin_p = Collective("pmin")
pmin_p.abstract_eval = _same_shape_rule("pmin", REAL)

all_gather_p = Collective("all_gather")


def _all_gather_rule(x: ShapedArray, *, axis_name, axis_size, axis, tiled) -> ShapedArray:
    check_dtype("all_gather", x, ANY)
    if tiled:
        if not 0 <= axis < x.ndim:
            raise InvalidArgumentError(f"all_gather: axis {axis} is out of range for tiled=True and operand {describe(x)} "
                                       f"(valid: 0 to {x.ndim - 1}; a 0-d operand cannot be tiled)")  # fmt: skip
        return ShapedArray((*x.shape[:axis], x.shape[axis] * axis_size, *x.shape[axis + 1 :]), x.dtype, x.weak_type)
    if not 0 <= axis <= x.ndim:
        raise InvalidArgumentError(f"all_gather: axis {axis} is out of range for operand {describe(x)} (valid: 0 to {x.ndim})")
    return ShapedArray((*x.shape[:axis], axis_size, *x.shape[axis:]), x.dtype, x.weak_type)


all_gather_p.abstract_eval = _all_gather_rule

axis_index_p = Collective("axis_index")
axis_index_p.abstract_eval = lambda *, axis_name: ShapedArray((), dtypes.int32, False)


# --- batching: reduce over the batch axis of the trace of that name -------------------------------


def _whole(trace: Any, op: str) -> None:
    if getattr(trace, "chunked", False):
        raise InvalidArgumentError(
            f"{op} over axis {trace.axis_name!r}: this vmap runs its axis in chunks (chunk_size), so a collective "
            "would see one chunk at a time instead of every example; drop chunk_size from the vmap that names the axis"
        )


def _elementwise_collective(prim: Primitive, reduce):
    """Axis rule of psum/pmean/pmax/pmin: `reduce(x, bdim, size)` over the named axis; elsewhere the
    collective acts on each example of the other trace, whose batch axis stays put."""

    def rule(trace, args, dims, *, axis_name):
        (x,), (d,) = args, dims
        if axis_name != trace.axis_name:
            return prim.bind(x, axis_name=axis_name), d
        _whole(trace, prim.name)
        return reduce(x, d, trace.axis_size), not_mapped

    axis_rules[prim] = rule


def _sum_over(x, d, size):
    # An unmapped value is the same in every example: the sum of `size` copies (wrapping like a sum of ints).
    if d is not_mapped:
        x, d = bdim_to_front(x, d, size), 0
    return _rd.reduce_sum_p.bind(x, axes=(d,))


def _mean_over(x, d, size):
    if d is not_mapped:
        return x
    return _ew.div_p.bind(_rd.reduce_sum_p.bind(x, axes=(d,)), _ew._const(x, size))


def _chooser_over(prim):
    def reduce(x, d, size):
        return x if d is not_mapped else prim.bind(x, axes=(d,))

    return reduce


_elementwise_collective(psum_p, _sum_over)
_elementwise_collective(pmean_p, _mean_over)
_elementwise_collective(pmax_p, _chooser_over(_rd.reduce_max_p))
_elementwise_collective(pmin_p, _chooser_over(_rd.reduce_min_p))


def _merge_tiled(y, axis):
    # (..., N, s, ...) -> (..., N * s, ...): the gathered pieces laid end to end along `axis`.
    shape = (*y.shape[:axis], y.shape[axis] * y.shape[axis + 1], *y.shape[axis + 2 :])
    return _st.reshape_p.bind(y, new_sizes=shape, dimensions=None)


def _all_gather_axis_rule(trace, args, dims, *, axis_name, axis_size, axis, tiled):
    (x,), (d,) = args, dims
    if axis_name != trace.axis_name:
        if d is not_mapped:
            return all_gather_p.bind(x, axis_name=axis_name, axis_size=axis_size, axis=axis, tiled=tiled), not_mapped
        out = all_gather_p.bind(move_axis(x, d, 0), axis_name=axis_name, axis_size=axis_size, axis=axis + 1, tiled=tiled)
        return out, 0
    _whole(trace, "all_gather")
    gathered = move_axis(bdim_to_front(x, d, trace.axis_size), 0, axis)
    return (_merge_tiled(gathered, axis) if tiled else gathered), not_mapped


axis_rules[all_gather_p] = _all_gather_axis_rule


def _axis_index_axis_rule(trace, args, dims, *, axis_name):
    if axis_name != trace.axis_name:  # not reached in practice: axis_index has no operands to carry it here
        return axis_index_p.bind(axis_name=axis_name), not_mapped
    _whole(trace, "axis_index")
    return _st.iota_p.bind(dtype=dtypes.int32, shape=(trace.axis_size,), dimension=0), 0


axis_rules[axis_index_p] = _axis_index_axis_rule


# --- differentiation ---------------------------------------------------------------------------------


def _self_transpose(prim):
    # psum and pmean are linear maps of the whole axis whose matrices (all ones, all 1/N) are symmetric:
    # each is its own transpose, so the cotangent is reduced the same way (JAX's rule).
    def transpose(ct, x, *, axis_name):
        if type(ct) is Zero:
            return [ct]
        return [prim.bind(ct, axis_name=axis_name)]

    return transpose


deflinear(psum_p, _self_transpose(psum_p))
deflinear(pmean_p, _self_transpose(pmean_p))


def _chooser_jvp(prim):
    # The tangent of the maximum over the axis is the mean of the tangents of the examples that attain it
    # (the same convention as reduce_max's rule).
    def jvp(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis_name=axis_name)
        hits = _ew.convert_element_type_p.bind(_bw.eq_p.bind(x, ans), new_dtype=x.dtype, weak_type=False)
        total = psum_p.bind(_ew.mul_p.bind(instantiate(t), hits), axis_name=axis_name)
        return ans, _ew.div_p.bind(total, psum_p.bind(hits, axis_name=axis_name))

    return jvp


pmax_p.jvp = _chooser_jvp(pmax_p)
pmin_p.jvp = _chooser_jvp(pmin_p)


def _all_gather_transpose(ct, x, *, axis_name, axis_size, axis, tiled):
    # Example i's slice of the gathered value is x_i in every example j, so x_i's cotangent is the sum over
    # j of slice i of ct_j: psum_scatter (looked up by name: its module imports this one).
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [PRIMITIVES["reduce_scatter"].bind(ct, axis_name=axis_name, axis_size=axis_size, scatter_dimension=axis, tiled=tiled)]


deflinear(all_gather_p, _all_gather_transpose)
defnondiff(axis_index_p)
