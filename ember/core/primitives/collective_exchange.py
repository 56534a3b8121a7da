"""Collectives that exchange pieces between the examples of a named axis: reduce_scatter, ppermute, all_to_all.

Like psum (ember/core/primitives/collective.py) they refer to their axis by name and run through
`Collective.bind`: under the vmap of that name the axis rule acts on the batch axis itself, under a
vmap of another name it applies the collective to each example and keeps that vmap's batch axis, and
when the name is bound to the processes (`ember.backends.communicators`) each is an ordinary primitive
whose kernel communicates. What example ``i`` of an axis of size ``N`` receives (``x_j``: example j's
operand):

- ``reduce_scatter(axis_size, scatter_dimension=s, tiled)``: block ``i`` (along `s`) of the sum over
  ``j`` of ``x_j``. Untiled, ``x.shape[s] == N`` and dimension `s` is removed; tiled, ``x.shape[s]``
  is divisible by ``N`` and shrinks by that factor.
- ``ppermute(perm)``: ``x_j`` for the pair ``(j, i)`` of `perm` (a tuple of (source, destination) int
  pairs, each source and each destination at most once), zeros when no pair sends to ``i``.
- ``all_to_all(axis_size, split_axis=a, concat_axis=c, tiled)``: piece ``i`` (along `a`) of every
  ``x_j``, laid out in ``j``'s order along `c`. Untiled, ``x.shape[a] == N``, axis `a` is removed and a
  new axis of size ``N`` is inserted at position `c` of the result; tiled, axis `a` is split into ``N``
  blocks and the ``N`` blocks received are concatenated along the existing axis `c`.

All three are linear: reduce_scatter transposes to all_gather (the same `tiled`), ppermute to ppermute
with the inverse pairs, all_to_all to all_to_all with `split_axis` and `concat_axis` swapped.
"""

from __future__ import annotations

from ember.core.abstract import ShapedArray, describe
from ember.core.ad import Zero, deflinear
from ember.core.batching import axis_rules, bdim_to_front, move_axis, not_mapped
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import reduction as _rd
from ember.core.primitives import structural as _st
from ember.core.primitives._rules import ANY, NUMERIC, check_dtype
from ember.core.primitives.collective import Collective, _whole, all_gather_p
from ember.errors import InvalidArgumentError, ShapeError

__all__ = ["all_to_all_p", "ppermute_p", "reduce_scatter_p"]


def _check_axis(op: str, what: str, axis: int, x: ShapedArray) -> None:
    if x.ndim == 0:
        raise InvalidArgumentError(f"{op}: the operand {describe(x)} is 0-d and has no {what} to split; give each "
                                   "example at least one dimension")  # fmt: skip
    if not 0 <= axis < x.ndim:
        raise InvalidArgumentError(f"{op}: {what} {axis} is out of range for operand {describe(x)} "
                                   f"(valid: 0 to {x.ndim - 1})")  # fmt: skip


def _check_split(op: str, what: str, axis: int, x: ShapedArray, axis_name, axis_size: int, tiled: bool) -> None:
    n = x.shape[axis]
    if tiled and (axis_size == 0 or n % axis_size):
        raise ShapeError(f"{op}: dimension {axis} of operand {describe(x)} has size {n}, which does not split into "
                         f"{axis_size} equal blocks, one per example of axis {axis_name!r} (tiled=True); pad it to a "
                         f"multiple of {axis_size}")  # fmt: skip
    if not tiled and n != axis_size:
        raise ShapeError(f"{op}: dimension {axis} of operand {describe(x)} has size {n}, but axis {axis_name!r} has "
                         f"{axis_size} examples: with tiled=False it must have exactly one entry per example (use "
                         "tiled=True to split it into blocks)")  # fmt: skip


# --- reduce_scatter (lax.psum_scatter) ---------------------------------------------------------------

reduce_scatter_p = Collective("reduce_scatter")


def _reduce_scatter_rule(x: ShapedArray, *, axis_name, axis_size, scatter_dimension, tiled) -> ShapedArray:
    check_dtype("psum_scatter", x, NUMERIC)
    _check_axis("psum_scatter", "scatter_dimension", scatter_dimension, x)
    _check_split("psum_scatter", "scatter_dimension", scatter_dimension, x, axis_name, axis_size, tiled)
    d = scatter_dimension
    shape = (*x.shape[:d], x.shape[d] // axis_size, *x.shape[d + 1 :]) if tiled else (*x.shape[:d], *x.shape[d + 1 :])
    return ShapedArray(shape, x.dtype, x.weak_type)


reduce_scatter_p.abstract_eval = _reduce_scatter_rule


def _reduce_scatter_axis_rule(trace, args, dims, *, axis_name, axis_size, scatter_dimension, tiled):
    (x,), (b,) = args, dims
    params = dict(axis_name=axis_name, axis_size=axis_size, tiled=tiled)
    if axis_name != trace.axis_name:
        if b is not_mapped:
            return reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension, **params), not_mapped
        return reduce_scatter_p.bind(move_axis(x, b, 0), scatter_dimension=scatter_dimension + 1, **params), 0
    _whole(trace, "psum_scatter")
    # The sum over the examples, whose dimension `scatter_dimension` (tiled: its blocks) becomes the batch axis.
    n, d = trace.axis_size, scatter_dimension
    total = _rd.reduce_sum_p.bind(bdim_to_front(x, b, n), axes=(0,))
    if tiled:
        blocks = (*total.shape[:d], n, total.shape[d] // n, *total.shape[d + 1 :])
        total = _st.reshape_p.bind(total, new_sizes=blocks, dimensions=None)
    return total, d


axis_rules[reduce_scatter_p] = _reduce_scatter_axis_rule


def _reduce_scatter_transpose(ct, x, *, axis_name, axis_size, scatter_dimension, tiled):
    # y_i = sum_j block_i(x_j), so x_j's cotangent holds ct_i at block i: every example's ct gathered.
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [all_gather_p.bind(ct, axis_name=axis_name, axis_size=axis_size, axis=scatter_dimension, tiled=tiled)]


deflinear(reduce_scatter_p, _reduce_scatter_transpose)


# --- ppermute --------------------------------------------------------------------------------------------

ppermute_p = Collective("ppermute")


def _ppermute_rule(x: ShapedArray, *, axis_name, perm) -> ShapedArray:
    check_dtype("ppermute", x, ANY)
    return ShapedArray(x.shape, x.dtype, x.weak_type)


ppermute_p.abstract_eval = _ppermute_rule


def _zeros(x, shape):
    return _st.broadcast_in_dim_p.bind(_ew._const(x, 0), shape=shape, broadcast_dimensions=())


def _permute_along(x, b: int, perm, n: int):
    """Position i of axis `b` of `x` replaced by the position its pair of `perm` sends to it (zeros when
    none does), as a few slices: runs of consecutive sources (a shift is two) and runs of zeros."""
    source = dict((dst, src) for src, dst in perm)
    runs: list[list] = []  # [first source or None, length]
    for dst in range(n):
        src = source.get(dst)
        last = runs[-1] if runs else None
        if last is not None and (src is None) == (last[0] is None) and (src is None or src == last[0] + last[1]):
            last[1] += 1
        else:
            runs.append([src, 1])
    pieces = []
    for src, length in runs:
        shape = (*x.shape[:b], length, *x.shape[b + 1 :])
        if src is None:
            pieces.append(_zeros(x, shape))
            continue
        start = tuple(src if k == b else 0 for k in range(x.ndim))
        limit = tuple(src + length if k == b else x.shape[k] for k in range(x.ndim))
        pieces.append(_st.slice_p.bind(x, start_indices=start, limit_indices=limit, strides=None))
    return pieces[0] if len(pieces) == 1 else _st.concatenate_p.bind(*pieces, dimension=b)


def _ppermute_axis_rule(trace, args, dims, *, axis_name, perm):
    (x,), (b,) = args, dims
    if axis_name != trace.axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), b
    _whole(trace, "ppermute")
    n = trace.axis_size
    if n == 0:
        return x, b
    if b is not_mapped:
        if len(perm) == n:  # every example receives the value they all hold
            return x, not_mapped
        x, b = bdim_to_front(x, b, n), 0
    return _permute_along(x, b, perm, n), b


axis_rules[ppermute_p] = _ppermute_axis_rule


def _ppermute_transpose(ct, x, *, axis_name, perm):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((dst, src) for src, dst in perm))]


deflinear(ppermute_p, _ppermute_transpose)


# --- all_to_all ------------------------------------------------------------------------------------------

all_to_all_p = Collective("all_to_all")


def _all_to_all_rule(x: ShapedArray, *, axis_name, axis_size, split_axis, concat_axis, tiled) -> ShapedArray:
    check_dtype("all_to_all", x, ANY)
    _check_axis("all_to_all", "split_axis", split_axis, x)
    _check_axis("all_to_all", "concat_axis", concat_axis, x)
    _check_split("all_to_all", "split_axis", split_axis, x, axis_name, axis_size, tiled)
    shape = list(x.shape)
    if tiled:
        shape[split_axis] //= axis_size
        shape[concat_axis] *= axis_size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, axis_size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


all_to_all_p.abstract_eval = _all_to_all_rule


def _all_to_all_axis_rule(trace, args, dims, *, axis_name, axis_size, split_axis, concat_axis, tiled):
    (x,), (b,) = args, dims
    params = dict(axis_name=axis_name, axis_size=axis_size, tiled=tiled)
    if axis_name != trace.axis_name:
        if b is not_mapped:
            return all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis, **params), not_mapped
        out = all_to_all_p.bind(move_axis(x, b, 0), split_axis=split_axis + 1, concat_axis=concat_axis + 1, **params)
        return out, 0
    _whole(trace, "all_to_all")
    # Axis 0 of `whole` is the sender j, axis 1 + split_axis the receiver i (tiled: its blocks, split off
    # first): the receiver becomes the batch axis and the sender moves to `concat_axis` of each example.
    n, a, c = trace.axis_size, split_axis, concat_axis
    whole = bdim_to_front(x, b, n)
    if tiled:
        blocks = (*whole.shape[: 1 + a], n, whole.shape[1 + a] // n, *whole.shape[2 + a :])
        whole = _st.reshape_p.bind(whole, new_sizes=blocks, dimensions=None)
    rest = [k for k in range(1, whole.ndim) if k != 1 + a]  # each example's own axes, in order
    out = _st.transpose_p.bind(whole, permutation=(1 + a, *rest[:c], 0, *rest[c:]))
    if tiled:  # the senders' blocks laid end to end along concat_axis
        merged = (*out.shape[: 1 + c], out.shape[1 + c] * out.shape[2 + c], *out.shape[3 + c :])
        out = _st.reshape_p.bind(out, new_sizes=merged, dimensions=None)
    return out, 0


axis_rules[all_to_all_p] = _all_to_all_axis_rule


def _all_to_all_transpose(ct, x, *, axis_name, axis_size, split_axis, concat_axis, tiled):
    # y_i's piece j (along concat_axis) is x_j's piece i (along split_axis): sending back swaps the roles.
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [all_to_all_p.bind(ct, axis_name=axis_name, axis_size=axis_size, split_axis=concat_axis,
                              concat_axis=split_axis, tiled=tiled)]  # fmt: skip


deflinear(all_to_all_p, _all_to_all_transpose)
