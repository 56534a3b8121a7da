"""What batching rules are written with.

A primitive's batching rule has the signature ``batch(axis_size, args, dims,
**params) -> (out, out_dim)`` (lists for primitives with several results):
`dims[i]` is the position of the batch axis in `args[i]`, or `not_mapped`
(None) when that operand is the same for every example. The rule computes all
examples at once with primitives, never with a Python loop, and says where the
batch axis of its result is. Unbatched operands stay unbatched where the
primitive allows it, so that nothing is broadcast in vain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.core.primitive import PRIMITIVES, Primitive

__all__ = [
    "axis_rules", "bdim_to_front", "defbroadcasting", "defvectorized", "move_axis", "not_mapped", "to_front_all",
]  # fmt: skip

not_mapped = None

# Rules of primitives that name a vmap axis (the collectives: psum, all_gather, axis_index, ...), with the
# signature ``rule(trace, args, dims, **params) -> (out, out_dim)``. The batching trace calls them for every
# such primitive, even when no operand is mapped, and hands over itself: the rule compares the primitive's
# `axis_name` with the trace's (`trace.axis_name`, `trace.axis_size`) to reduce over that axis or to leave
# it alone. Primitives that carry a function to run later (custom_lin's bwd, remat_lin's block) have such
# rules too: the batched function they build enters that vmap's trace again when it runs (in the backward
# pass), so that collectives inside it still find their axis and closed-over batched values stay batched.
axis_rules: dict[Primitive, Callable[..., Any]] = {}


def _p(name: str) -> Primitive:
    return PRIMITIVES[name]


def move_axis(x: Any, src: int, dst: int) -> Any:
    """`x` with axis `src` moved to position `dst`."""
    if src == dst:
        return x
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    return _p("transpose").bind(x, permutation=tuple(perm))


def bdim_to_front(x: Any, bdim: int | None, size: int) -> Any:
    """`x` with its batch axis first; an unbatched `x` is broadcast along a new first axis."""
    if bdim is not_mapped:
        return _p("broadcast_in_dim").bind(x, shape=(size, *x.shape), broadcast_dimensions=tuple(range(1, x.ndim + 1)))
    return move_axis(x, bdim, 0)


def to_front_all(size: int, args: Sequence[Any], dims: Sequence[int | None]) -> list[Any]:
    """Every operand with its batch axis first (unbatched ones broadcast)."""
    return [bdim_to_front(x, d, size) for x, d in zip(args, dims)]


def defvectorized(primitive: Primitive) -> None:
    """A primitive that acts on each element (or each example) independently of the others,
    with one operand: the batch axis stays where it is."""

    def batch(size, args, dims, **params):
        (x,), (d,) = args, dims
        return primitive.bind(x, **params), d

    primitive.batch = batch


def _align_front(x: Any, bdim: int | None, rank: int) -> Any:
    # A batched operand with its batch axis first and singleton axes after it, so that NumPy
    # broadcasting lines its own axes up with those of operands of rank `rank`.
    x = move_axis(x, bdim, 0)
    missing = rank - (x.ndim - 1)
    if missing > 0:
        x = _p("expand_dims").bind(x, dimensions=tuple(range(1, 1 + missing)))
    return x


def defbroadcasting(primitive: Primitive) -> None:
    """An elementwise primitive whose operands broadcast like NumPy's: batched operands get their
    batch axis first (padded to the result's rank); unbatched operands are left as they are.
    Primitives with several results (all of the broadcast shape) are fine too."""

    def batch(size, args, dims, **params):
        if len(args) == 1:
            out, out_dim = primitive.bind(args[0], **params), dims[0]
        else:
            rank = max((x.ndim - (d is not not_mapped)) for x, d in zip(args, dims))
            aligned = [x if d is not_mapped else _align_front(x, d, rank) for x, d in zip(args, dims)]
            out, out_dim = primitive.bind(*aligned, **params), 0
        if primitive.multiple_results:  # every result has the broadcast shape
            return out, [out_dim] * len(out)
        return out, out_dim

    primitive.batch = batch


def shift_axes(axes: Sequence[int], by: int = 1) -> tuple[int, ...]:
    return tuple(a + by for a in axes)


def batch_at_front(rule: Callable[..., Any]) -> Callable[..., Any]:
    """A batching rule from ``rule(size, args_with_batch_first, **params) -> (out, out_dim)``:
    every operand is moved (or broadcast) to have its batch axis first."""

    def batch(size, args, dims, **params):
        return rule(size, to_front_all(size, args, dims), **params)

    return batch
