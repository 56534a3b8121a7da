"""Collectives over named vmap axes, as in ``jax.lax``: psum, pmean, pmax, pmin, all_gather, axis_index.

They work inside ``ember.vmap(f, axis_name=name)``: every example sees the
reduction over all the examples of the axis called `name`. Outside such a vmap
the name is unbound and they raise `ember.errors.UnboundAxisNameError` (a
NameError). `x` may be a pytree of arrays; `axis_name` may be a tuple of names
(psum, pmean, pmax, pmin: reduce over each).
"""

from __future__ import annotations

from typing import Any

from ember.core.array import Array, from_host
from ember.core.primitives import collective as _co
from ember.core.pytree import tree_map
from ember.errors import InvalidArgumentError

__all__ = ["all_gather", "axis_index", "pmax", "pmean", "pmin", "psum"]


def _names(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _no_groups(op: str, axis_index_groups: Any) -> None:
    if axis_index_groups is not None:
        raise InvalidArgumentError(f"{op}: axis_index_groups is not supported (vmap has no device groups); leave it None")


def _reducer(prim, op: str):
    def apply(x, axis_name, *, axis_index_groups=None):
        _no_groups(op, axis_index_groups)
        names = _names(axis_name)

        def one(leaf):
            leaf = leaf if isinstance(leaf, Array) else from_host(leaf, op)
            for name in names:
                leaf = prim.bind(leaf, axis_name=name)
            return leaf

        return tree_map(one, x)

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
