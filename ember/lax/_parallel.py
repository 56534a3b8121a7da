"""Collectives over named vmap axes, as in ``jax.lax``: psum, pmean, pmax, pmin, all_gather, axis_index,
psum_scatter (also called reduce_scatter), ppermute, pshuffle, all_to_all.

They work inside ``ember.vmap(f, axis_name=name)``: every example sees the
reduction over all the examples of the axis called `name`. Outside such a vmap
the name is unbound and they raise `ember.errors.UnboundAxisNameError` (a
NameError). `x` may be a pytree of arrays; `axis_name` may be a tuple of names
(psum, pmean, pmax, pmin: reduce over each).
"""

from __future__ import annotations

import operator
from typing import Any

from ember.core.array import Array, from_host
from ember.core.primitives import collective as _co
from ember.core.primitives import collective_exchange as _cx
from ember.core.primitives import structural as _st
from ember.core.pytree import tree_flatten, tree_map, tree_unflatten
from ember.errors import InvalidArgumentError

__all__ = ["all_gather", "all_to_all", "axis_index", "pmax", "pmean", "pmin", "ppermute", "pshuffle", "psum",
           "psum_scatter", "reduce_scatter"]  # fmt: skip


def _names(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _no_groups(op: str, axis_index_groups: Any) -> None:
    if axis_index_groups is not None:
        raise InvalidArgumentError(f"{op}: axis_index_groups is not supported (vmap has no device groups); leave it None")


def _packed(prim, leaves: list[Array], name: Any) -> list[Array]:
    """`prim` over the processes bound to `name`, one collective per (dtype, weak type): each costs a
    handshake and a message, so a model's gradients travel as one buffer, not one per parameter. The
    reductions are elementwise, so packing changes no value."""
    groups: dict[tuple, list[int]] = {}
    for i, leaf in enumerate(leaves):
        groups.setdefault((leaf.dtype, leaf.weak_type), []).append(i)
    out = list(leaves)
    for members in groups.values():
        if len(members) == 1:
            out[members[0]] = prim.bind(leaves[members[0]], axis_name=name)
            continue
        flat = [_st.reshape_p.bind(leaves[i], new_sizes=(leaves[i].size,), dimensions=None) for i in members]
        total = prim.bind(_st.concatenate_p.bind(*flat, dimension=0), axis_name=name)
        start = 0
        for i in members:
            stop = start + leaves[i].size
            piece = _st.slice_p.bind(total, start_indices=(start,), limit_indices=(stop,), strides=None)
            out[i] = _st.reshape_p.bind(piece, new_sizes=leaves[i].shape, dimensions=None)
            start = stop
    return out


def _reducer(prim, op: str):
    def apply(x, axis_name, *, axis_index_groups=None):
        _no_groups(op, axis_index_groups)
        names = _names(axis_name)
        leaves, tree = tree_flatten(x)
        leaves = [leaf if isinstance(leaf, Array) else from_host(leaf, op) for leaf in leaves]
        for name in names:
            if len(leaves) > 1 and _co.axis_frame(name, op).level < 0:
                leaves = _packed(prim, leaves, name)
            else:
                leaves = [prim.bind(leaf, axis_name=name) for leaf in leaves]
        return tree_unflatten(tree, leaves)

    apply.__name__ = apply.__qualname__ = op
    return apply


psum = _reducer(_co.psum_p, "psum")
psum.__doc__ = """The sum of `x` over every example of the named vmap axis (the same result in each example).

    ``psum(1, name)`` is the axis size. Linear; its transpose is psum (as in JAX).

    >>> ember.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(enp.arange(4.0))
    Array([6., 6., 6., 6.], dtype=float32)
    """
pmean = _reducer(_co.pmean_p, "pmean")
pmean.__doc__ = """The mean of `x` over the examples of the named vmap axis (integers: truncated, as lax.div).

    >>> ember.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(enp.arange(3.0))
    Array([-1.,  0.,  1.], dtype=float32)
    """
pmax = _reducer(_co.pmax_p, "pmax")
pmax.__doc__ = """The maximum of `x` over the examples of the named vmap axis.

    Its derivative flows to the examples that attain the maximum (split evenly between ties).

    >>> ember.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(enp.asarray([1.0, 5.0, 2.0]))
    Array([5., 5., 5.], dtype=float32)
    """
pmin = _reducer(_co.pmin_p, "pmin")
pmin.__doc__ = """The minimum of `x` over the examples of the named vmap axis.

    >>> ember.vmap(lambda x: lax.pmin(x, "i"), axis_name="i")(enp.asarray([1.0, 5.0, 2.0]))
    Array([1., 1., 1.], dtype=float32)
    """


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
    """Every example's `x`, stacked along a new axis `axis` (of the axis size), in every example.

    With ``tiled=True`` the pieces are concatenated along the existing axis `axis` instead.
    Its transpose sums the cotangents over the examples and keeps this example's slice
    (JAX's psum_scatter).

    >>> ember.vmap(lambda x: lax.all_gather(x, "i"), axis_name="i")(enp.arange(3.0))
    Array([[0., 1., 2.],
           [0., 1., 2.],
           [0., 1., 2.]], dtype=float32)
    """
    _no_groups("all_gather", axis_index_groups)
    if isinstance(axis_name, (tuple, list)):
        raise InvalidArgumentError(f"all_gather: gathers over one named axis, got axis_name={axis_name!r}; nest the calls")
    size = _co.axis_frame(axis_name, "all_gather").axis_size
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise InvalidArgumentError(f"all_gather: axis must be an int, got {axis!r}")

    def one(leaf):
        leaf = leaf if isinstance(leaf, Array) else from_host(leaf, "all_gather")
        rank = leaf.ndim if tiled else leaf.ndim + 1
        if not -rank <= axis < rank:
            raise InvalidArgumentError(f"all_gather: axis {axis} is out of range for an operand of shape {leaf.shape}"
                                       f"{' with tiled=True' if tiled else ''} (valid: {-rank} to {rank - 1})")  # fmt: skip
        return _co.all_gather_p.bind(leaf, axis_name=axis_name, axis_size=size, axis=axis % rank, tiled=bool(tiled))

    return tree_map(one, x)


def axis_index(axis_name):
    """This example's position (int32) along the named vmap axis: 0, 1, ..., size - 1.

    A tuple of names gives the position in their row-major product (the first name outermost).

    >>> ember.vmap(lambda x: x * lax.axis_index("i"), axis_name="i")(enp.ones(3))
    Array([0., 1., 2.], dtype=float32)
    """
    names = _names(axis_name)
    if not names:
        raise InvalidArgumentError("axis_index: needs an axis name (or a non-empty tuple of names)")
    index = None
    for name in names:
        here = _co.axis_index_p.bind(axis_name=name)
        if index is None:
            index = here
        else:
            size = _co.axis_frame(name, "axis_index").axis_size
            index = index * size + here
    return index


def _one_name(op: str, axis_name: Any) -> int:
    """The size of the one axis `axis_name` names (these collectives exchange pieces along a single axis)."""
    if isinstance(axis_name, (tuple, list)):
        raise InvalidArgumentError(f"{op}: works over one named axis, got axis_name={axis_name!r}; nest the calls")
    frame = _co.axis_frame(axis_name, op)
    _co._whole(frame, op)  # before the shapes are checked against one chunk's size
    return frame.axis_size


def _axis_param(op: str, what: str, value: Any, rank: int, shape: tuple) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgumentError(f"{op}: {what} must be an int, got {value!r}")
    if rank == 0:
        raise InvalidArgumentError(f"{op}: an operand of shape {shape} (0-d) has no {what} to split; give each example "
                                   "at least one dimension")  # fmt: skip
    if not -rank <= value < rank:
        raise InvalidArgumentError(f"{op}: {what} {value} is out of range for an operand of shape {shape} "
                                   f"(valid: {-rank} to {rank - 1})")  # fmt: skip
    return value % rank


def _leaf(op: str, leaf: Any) -> Array:
    return leaf if isinstance(leaf, Array) else from_host(leaf, op)


def _scatter(op: str, x, axis_name, scatter_dimension, axis_index_groups, tiled):
    _no_groups(op, axis_index_groups)
    size = _one_name(op, axis_name)

    def one(leaf):
        leaf = _leaf(op, leaf)
        d = _axis_param(op, "scatter_dimension", scatter_dimension, leaf.ndim, leaf.shape)
        return _cx.reduce_scatter_p.bind(leaf, axis_name=axis_name, axis_size=size, scatter_dimension=d,
                                         tiled=bool(tiled))  # fmt: skip

    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False):
    """The sum of `x` over the examples of the named vmap axis, of which each example keeps only its block.

    Example ``i`` receives block ``i`` (along `scatter_dimension`) of ``psum(x, axis_name)``. With
    ``tiled=False`` that dimension must have the axis size and is removed (entry ``i``); with
    ``tiled=True`` it must be divisible by the axis size and shrinks by that factor. Linear; its
    transpose is all_gather (the same `tiled`).

    Args:
      x: an array (or pytree of arrays) of a numeric dtype, at least 1-d.
      axis_name: the name of a vmap axis (or of an axis bound to the processes).
      scatter_dimension: the dimension split among the examples.
      axis_index_groups: not supported (None).
      tiled: split the dimension into blocks instead of removing it.

    Returns:
      This example's block of the sum.

    >>> x = enp.asarray([[1.0, 2.0], [10.0, 20.0]])   # two examples, each [a, b]
    >>> ember.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
    Array([11., 22.], dtype=float32)
    >>> ember.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(enp.ones((2, 4)))
    Array([[2., 2.],
           [2., 2.]], dtype=float32)
    """
    return _scatter("psum_scatter", x, axis_name, scatter_dimension, axis_index_groups, tiled)


def reduce_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False):
    """Another name of `psum_scatter` (the collective's usual name outside JAX): example ``i`` keeps block
    ``i`` of the sum over the examples.

    >>> ember.vmap(lambda v: lax.reduce_scatter(v, "i"), axis_name="i")(enp.asarray([[1, 2], [3, 4]]))
    Array([4, 6], dtype=int32)
    """
    return _scatter("reduce_scatter", x, axis_name, scatter_dimension, axis_index_groups, tiled)


def _index(op: str, value: Any) -> int:
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise InvalidArgumentError(f"{op}: the entries of perm must be ints, got {value!r}")


def _pairs(op: str, axis_name: Any, perm: Any, size: int) -> tuple[tuple[int, int], ...]:
    """`perm` as a tuple of (source, destination) int pairs, checked against the axis size."""
    try:
        raw = [tuple(pair) for pair in perm]
    except TypeError:
        raise InvalidArgumentError(f"{op}: perm must be a sequence of (source, destination) pairs, "
                                   f"got {perm!r}") from None  # fmt: skip
    pairs, seen_src, seen_dst = [], {}, {}
    for pair in raw:
        if len(pair) != 2:
            raise InvalidArgumentError(f"{op}: each entry of perm is a (source, destination) pair, got {pair!r}")
        src, dst = _index(op, pair[0]), _index(op, pair[1])
        if not (0 <= src < size and 0 <= dst < size):
            raise InvalidArgumentError(f"{op}: pair {(src, dst)} is out of range for axis {axis_name!r} of size {size} "
                                       f"(sources and destinations are 0 to {size - 1})")  # fmt: skip
        if src in seen_src or dst in seen_dst:
            twice, other = ("source", seen_src[src]) if src in seen_src else ("destination", seen_dst[dst])
            raise InvalidArgumentError(f"{op}: pairs {other} and {(src, dst)} share their {twice} on axis {axis_name!r} "
                                       f"of size {size}: each example sends at most once and receives at most once")  # fmt: skip
        seen_src[src], seen_dst[dst] = (src, dst), (src, dst)
        pairs.append((src, dst))
    return tuple(pairs)


def ppermute(x, axis_name, perm):
    """Send each example's `x` to another example of the named vmap axis.

    `perm` lists (source, destination) pairs: example ``dst`` receives the `x` of example ``src``. Each
    example sends at most once and receives at most once; examples that receive nothing get zeros (as in
    JAX). Linear; its transpose sends back along the inverse pairs.

    Args:
      x: an array (or pytree of arrays), any dtype.
      axis_name: the name of a vmap axis (or of an axis bound to the processes).
      perm: a sequence of (source, destination) pairs of positions along the axis.

    Returns:
      What this example receives.

    >>> shift = [(0, 1), (1, 2), (2, 3), (3, 0)]
    >>> ember.vmap(lambda v: lax.ppermute(v, "i", shift), axis_name="i")(enp.arange(4.0))
    Array([3., 0., 1., 2.], dtype=float32)
    >>> ember.vmap(lambda v: lax.ppermute(v, "i", [(0, 2)]), axis_name="i")(enp.asarray([5, 6, 7]))
    Array([0, 0, 5], dtype=int32)
    """
    pairs = _pairs("ppermute", axis_name, perm, _one_name("ppermute", axis_name))
    return tree_map(lambda leaf: _cx.ppermute_p.bind(_leaf("ppermute", leaf), axis_name=axis_name, perm=pairs), x)


def pshuffle(x, axis_name, perm):
    """Example ``i`` of the named vmap axis receives the `x` of example ``perm[i]`` (`perm`: a permutation of
    ``range(axis size)``); a ppermute with the pairs ``(perm[i], i)``.

    >>> ember.vmap(lambda v: lax.pshuffle(v, "i", [2, 0, 1]), axis_name="i")(enp.asarray([5.0, 6.0, 7.0]))
    Array([7., 5., 6.], dtype=float32)
    """
    size = _one_name("pshuffle", axis_name)
    sources = [_index("pshuffle", s) for s in perm]
    if sorted(sources) != list(range(size)):
        raise InvalidArgumentError(f"pshuffle: perm {list(perm)!r} is not a permutation of range({size}), the positions "
                                   f"along axis {axis_name!r}; use ppermute for partial exchanges")  # fmt: skip
    pairs = tuple((src, dst) for dst, src in enumerate(sources))
    return tree_map(lambda leaf: _cx.ppermute_p.bind(_leaf("pshuffle", leaf), axis_name=axis_name, perm=pairs), x)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None, tiled: bool = False):
    """Split `x` among the examples of the named vmap axis and collect the pieces every example sent here.

    Example ``i`` receives piece ``i`` (along `split_axis`) of every example's `x`, in the examples'
    order along `concat_axis`. With ``tiled=False`` ``x.shape[split_axis]`` must be the axis size: that
    axis is removed and a new axis of the axis size is inserted at position `concat_axis` of the result
    (the shape is ``np.insert(np.delete(x.shape, split_axis), concat_axis, size)``). With ``tiled=True``
    it must be divisible by the axis size: `split_axis` shrinks by that factor and `concat_axis` grows by
    it. Linear; its transpose swaps `split_axis` and `concat_axis`.

    Args:
      x: an array (or pytree of arrays), any dtype, at least 1-d.
      axis_name: the name of a vmap axis (or of an axis bound to the processes).
      split_axis: the axis of `x` split among the examples.
      concat_axis: where the pieces received go (see above).
      axis_index_groups: not supported (None).
      tiled: split into blocks and concatenate instead of removing and inserting an axis.

    Returns:
      The pieces this example received.

    >>> x = enp.asarray([[0.0, 1.0], [10.0, 11.0]])   # example j holds [10 j, 10 j + 1]
    >>> ember.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(x)
    Array([[ 0., 10.],
           [ 1., 11.]], dtype=float32)
    """
    op = "all_to_all"
    _no_groups(op, axis_index_groups)
    size = _one_name(op, axis_name)

    def one(leaf):
        leaf = _leaf(op, leaf)
        a = _axis_param(op, "split_axis", split_axis, leaf.ndim, leaf.shape)
        c = _axis_param(op, "concat_axis", concat_axis, leaf.ndim, leaf.shape)
        return _cx.all_to_all_p.bind(leaf, axis_name=axis_name, axis_size=size, split_axis=a, concat_axis=c,
                                     tiled=bool(tiled))  # fmt: skip

    return tree_map(one, x)
