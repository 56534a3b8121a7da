"""`shard_map`: a function run on equal shards of a batch, one per process or device, whose collectives
over the axis name reduce across the shards."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember import lax
from ember.backends import communicators
from ember.core import devices as _devices
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.errors import InvalidArgumentError
from ember.numpy import asarray
from ember.transforms import custom_jvp, vmap

__all__ = ["shard_map"]


def shard_map(fun: Callable, axis_name: Any = "processes", in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """`fun` run on equal shards of the batch, one per member of `axis_name`: data parallelism.

    The sharded function takes the GLOBAL arguments (the same on every process). Each argument's
    batch axis (`in_axes`: an int, or None for an argument every shard sees whole; a tuple gives one
    per positional argument) is split into as many equal shards as the axis has members: the
    processes when `axis_name` is bound by `ember.distributed.initialize` (each process runs its
    shard), else the default platform's devices (``ember.devices()``; the shards then run in this
    process as ``ember.vmap(fun, axis_name=axis_name)``). Inside `fun`, collectives over `axis_name`
    reduce across the shards: average gradients with ``lax.pmean(grads, axis_name)``. Outputs with an
    int `out_axes` are gathered back into the whole batch on every process; ``out_axes=None`` returns
    the shard's value as it is (one that is the same on every shard, as after pmean). A tuple gives
    one per output of a tuple.

    Works under jit and grad: differentiating the sharded function gives the gradient of the global
    computation (an argument's cotangent is averaged over the shards, as each holds it whole).

    >>> f = ember.shard_map(lambda x: x - lax.pmean(x.mean(), "shards"), axis_name="shards")
    >>> f(enp.arange(4.0))
    Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    name = getattr(fun, "__name__", "fun")

    @functools.wraps(fun)
    def sharded(*args: Any) -> Any:
        axes = _per_argument(in_axes, len(args), name)
        comm = communicators.bound.get(axis_name)
        if comm is None:
            return _on_devices(fun, axis_name, axes, out_axes, args, name)
        enter = _entering(axis_name)

        def local(leaf: Any, i: int, a: Any) -> Any:
            leaf = _array(leaf)
            if leaf.dtype.kind in "fc":
                leaf = enter(leaf)
            if a is None:
                return leaf
            axis = _batch_axis(leaf, a, i, name)
            per = _check_divisible(leaf, axis, comm.size, i, name, axis_name)
            return lax.slice_in_dim(leaf, comm.rank * per, (comm.rank + 1) * per, axis=axis)

        shards = [_tree_map(lambda leaf, i=i, a=a: local(leaf, i, a), arg)
                  for i, (arg, a) in enumerate(zip(args, axes))]  # fmt: skip
        out = fun(*shards)
        return _outputs(out, out_axes, name, lambda leaf, a: lax.all_gather(leaf, axis_name, axis=a, tiled=True))

    return sharded


def _array(leaf: Any) -> Any:
    return leaf if hasattr(leaf, "aval") else asarray(leaf)


def _tree_map(fn: Callable, tree: Any) -> Any:
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [fn(leaf) for leaf in leaves])


def _per_argument(in_axes: Any, n: int, name: str) -> list[Any]:
    axes = list(in_axes) if isinstance(in_axes, (tuple, list)) else [in_axes] * n
    if len(axes) != n:
        raise InvalidArgumentError(f"shard_map({name}): in_axes has {len(axes)} entries for {n} arguments; give one "
                                   "int or None per positional argument")  # fmt: skip
    for a in axes:
        if a is not None and (not isinstance(a, int) or isinstance(a, bool)):
            raise InvalidArgumentError(f"shard_map({name}): in_axes entries must be ints or None, got {a!r}")
    return axes


def _batch_axis(leaf: Any, axis: int, i: int, name: str) -> int:
    if not -leaf.ndim <= axis < leaf.ndim:
        raise InvalidArgumentError(f"shard_map({name}): in_axes {axis} is out of range for argument {i} of shape "
                                   f"{tuple(leaf.shape)}; use None for an argument every shard sees whole")  # fmt: skip
    return axis % leaf.ndim


def _check_divisible(leaf: Any, axis: int, count: int, i: int, name: str, axis_name: Any) -> int:
    size = leaf.shape[axis]
    if size % count:
        raise InvalidArgumentError(
            f"shard_map({name}): argument {i} has size {size} along its batch axis {axis} (shape {tuple(leaf.shape)}), "
            f"which does not split into {count} equal shards (one per member of axis {axis_name!r}); give a batch "
            f"that is a multiple of {count}, or in_axes None for an argument every shard sees whole"
        )
    return size // count


@functools.cache
def _entering(axis_name: Any) -> Callable:
    # A global argument enters each process's shard unchanged; in its derivative it is the mean over the
    # processes (equal to the tangent, which every process holds the same), whose transpose averages the
    # processes' cotangents: each holds the argument whole, so the gradient of the global computation
    # is that average (as JAX's shard_map treats an argument replicated over an axis).
    @custom_jvp
    def enter(x):
        return x

    def tangent(t, ans, x):
        return lax.pmean(t, axis_name) if t.dtype.kind in "fc" else t

    enter.defjvps(tangent)
    return enter


def _outputs(out: Any, out_axes: Any, name: str, gather: Callable[[Any, int], Any]) -> Any:
    """Each output leaf gathered along its int out_axes (None: as it is)."""
    if isinstance(out_axes, (tuple, list)):
        if not isinstance(out, (tuple, list)) or len(out) != len(out_axes):
            got = f"a {type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list)) else type(out).__name__
            raise InvalidArgumentError(f"shard_map({name}): out_axes has {len(out_axes)} entries but the function "
                                       f"returned {got}; give one out_axes entry per output")  # fmt: skip
        return type(out)(_outputs(o, a, name, gather) for o, a in zip(out, out_axes))
    if out_axes is None:
        return out
    if not isinstance(out_axes, int) or isinstance(out_axes, bool):
        raise InvalidArgumentError(f"shard_map({name}): out_axes must be an int, None or a tuple of them, "
                                   f"got {out_axes!r}")  # fmt: skip

    def one(leaf: Any) -> Any:
        if leaf.ndim == 0:
            raise InvalidArgumentError(f"shard_map({name}): an output is 0-d, so it has no batch axis to gather "
                                       f"along (out_axes={out_axes}); return it with out_axes=None when it is the same "
                                       "on every shard (after lax.pmean or lax.psum)")  # fmt: skip
        if not -leaf.ndim <= out_axes < leaf.ndim:
            raise InvalidArgumentError(f"shard_map({name}): out_axes {out_axes} is out of range for an output of shape "
                                       f"{tuple(leaf.shape)}")  # fmt: skip
        return gather(leaf, out_axes % leaf.ndim)

    return _tree_map(one, out)


def _on_devices(fun: Callable, axis_name: Any, axes: list, out_axes: Any, args: tuple, name: str) -> Any:
    """One process: the shards, one per device of the default platform, as a vmap named `axis_name`
    over a (shards, batch / shards, ...) reshape of each argument."""
    count = len(_devices.all_devices(_devices.current.place.device.platform))
    reshaped = []
    for i, (arg, a) in enumerate(zip(args, axes)):
        if a is None:
            reshaped.append(arg)
            continue

        def split(leaf, i=i, a=a):
            leaf = _array(leaf)
            axis = _batch_axis(leaf, a, i, name)
            per = _check_divisible(leaf, axis, count, i, name, axis_name)
            return lax.reshape(leaf, (*leaf.shape[:axis], count, per, *leaf.shape[axis + 1 :]))

        reshaped.append(_tree_map(split, arg))
    vmap_in = tuple(None if a is None else _tree_map(lambda leaf, a=a: a % max(_array(leaf).ndim, 1), arg)
                    for arg, a in zip(args, axes))  # fmt: skip
    stacked = vmap(fun, in_axes=vmap_in, out_axes=_vmap_out_axes(out_axes), axis_name=axis_name)(*reshaped)

    def merge(leaf: Any, a: int) -> Any:
        # the vmap put the shard axis at a, each shard's batch right after it: (..., shards, per, ...)
        a = a % (leaf.ndim - 1)
        return lax.reshape(leaf, (*leaf.shape[:a], leaf.shape[a] * leaf.shape[a + 1], *leaf.shape[a + 2 :]))

    return _outputs_merged(stacked, out_axes, name, merge)


def _vmap_out_axes(out_axes: Any) -> Any:
    if isinstance(out_axes, (tuple, list)):
        return type(out_axes)(_vmap_out_axes(a) for a in out_axes)
    return out_axes if out_axes is None or out_axes >= 0 else out_axes - 1


def _outputs_merged(out: Any, out_axes: Any, name: str, merge: Callable[[Any, int], Any]) -> Any:
    if isinstance(out_axes, (tuple, list)):
        return type(out)(_outputs_merged(o, a, name, merge) for o, a in zip(out, out_axes))
    if out_axes is None:
        return out

    def one(leaf: Any) -> Any:
        if leaf.ndim < 2:
            raise InvalidArgumentError(f"shard_map({name}): an output is 0-d, so it has no batch axis to gather "
                                       f"along (out_axes={out_axes}); return it with out_axes=None when it is the same "
                                       "on every shard (after lax.pmean or lax.psum)")  # fmt: skip
        return merge(leaf, out_axes)

    return _tree_map(one, out)
