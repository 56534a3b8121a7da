"""Vectorization: the batching trace and `vmap`.

A `BatchTracer` holds a value with one extra axis, the batch axis, at position
`bdim` (or `not_mapped`: the same value for every example). Applying a
primitive to batch tracers calls the primitive's batching rule, which computes
every example at once; a primitive without a rule (one a user registered)
falls back to a loop over the batch, with a warning naming it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ember.core.abstract import ShapedArray
from ember.core.array import Array, from_host
from ember.core.batching import bdim_to_front, move_axis, not_mapped
from ember.core.primitive import PRIMITIVES, Primitive, Trace, Tracer, new_trace
from ember.core.pytree import broadcast_prefix, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ember.errors import ConcretizationError, InvalidArgumentError

__all__ = ["BatchTrace", "BatchTracer", "vmap"]


class BatchTracer(Tracer):
    __slots__ = ("bdim", "val")

    def __init__(self, trace: BatchTrace, val: Any, bdim: int | None):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    @property
    def aval(self) -> ShapedArray:
        aval = self.val.aval
        if self.bdim is not_mapped:
            return aval
        shape = aval.shape[: self.bdim] + aval.shape[self.bdim + 1 :]
        return ShapedArray(shape, aval.dtype, aval.weak_type)

    def _concrete(self, what: str):
        if self.bdim is not_mapped:
            return self.val._concrete(what)
        raise ConcretizationError(
            f"{what} needs one concrete value, but inside vmap this {self.aval.str_short()} value differs from example "
            "to example; write the choice with enp.where (elementwise) or lax.cond instead of Python control flow"
        )


class BatchTrace(Trace):
    def __init__(self, level: int, axis_size: int, axis_name: Any = None):
        super().__init__(level)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def pure(self, value: Any) -> BatchTracer:
        return BatchTracer(self, value, not_mapped)

    def process_primitive(self, primitive: Primitive, tracers: list[BatchTracer], params: dict[str, Any]):
        vals = [t.val for t in tracers]
        dims = [t.bdim for t in tracers]
        if all(d is not_mapped for d in dims):
            out = primitive.bind(*vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, not_mapped) for o in out]
            return BatchTracer(self, out, not_mapped)
        rule = primitive.batch or _loop_rule(primitive)
        out, out_dims = rule(self.axis_size, vals, dims, **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dims, strict=True)]
        return BatchTracer(self, out, out_dims)


_WARNED: set[str] = set()


def _loop_rule(primitive: Primitive) -> Callable[..., Any]:
    """A batching rule for a primitive that has none: one call per example, stacked. Correct, slow."""
    if primitive.name not in _WARNED:
        _WARNED.add(primitive.name)
        warnings.warn(
            f"vmap: primitive '{primitive.name}' has no batching rule, so ember loops over the batch in Python "
            "(correct but slow); give it a rule with `primitive.batch = ...` (see ember/core/batching.py)",
            stacklevel=4,
        )

    def rule(size, args, dims, **params):
        front = [x if d is not_mapped else move_axis(x, d, 0) for x, d in zip(args, dims)]
        results = []
        for i in range(size):
            example = [x if d is not_mapped else _index(x, i) for x, d in zip(front, dims)]
            out = primitive.bind(*example, **params)
            results.append(out if primitive.multiple_results else [out])
        stacked = [_stack([r[k] for r in results]) for k in range(len(results[0]))] if results else []
        if primitive.multiple_results:
            return stacked, [0] * len(stacked)
        return stacked[0], 0

    return rule


def _index(x: Any, i: int) -> Any:
    start = (i,) + (0,) * (x.ndim - 1)
    piece = PRIMITIVES["slice"].bind(x, start_indices=start, limit_indices=(i + 1, *x.shape[1:]), strides=None)
    return PRIMITIVES["squeeze"].bind(piece, dimensions=(0,))


def _stack(xs: Sequence[Any]) -> Any:
    expanded = [PRIMITIVES["expand_dims"].bind(x, dimensions=(0,)) for x in xs]
    return PRIMITIVES["concatenate"].bind(*expanded, dimension=0)


# --- the public transform ---------------------------------------------------------------------------


def _axis(op: str, axis: Any, ndim: int, where: str) -> int | None:
    if axis is None:
        return None
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise InvalidArgumentError(f"{op}: axes must be ints or None, got {axis!r} for {where}")
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"{op}: axis {axis} is out of range for {where} of rank {ndim - 1} "
                                   f"(valid: {-ndim} to {ndim - 1})")  # fmt: skip
    return axis % ndim


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         chunk_size: int | None = None, axis_name: Any = None) -> Callable:  # fmt: skip
    """Vectorize `fun` over an axis of its arguments: ``vmap(f)(xs)[i] == f(xs[i])``, without a loop.

    Args:
      fun: a function of arrays (pytrees of arrays).
      in_axes: for each positional argument, the axis to map over (an int, negative ones too) or
        None (not mapped); an int applies to every argument; a tuple/pytree prefix of the arguments
        gives one per subtree.
      out_axes: where the mapped axis goes in the outputs (int, None for outputs that do not depend
        on the mapped axis, or a pytree prefix of the outputs).
      axis_size: the batch size, needed when no argument is mapped.
      chunk_size: process the batch in chunks of this many examples, one after the other (less
        memory, same result).
      axis_name: a name for the mapped axis, for collectives inside `fun`.

    >>> ember.vmap(lambda x, y: x @ y, in_axes=(0, None))(enp.ones((5, 3)), enp.ones(3)).shape
    (5,)
    """
    op = "vmap"
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    def batched(*args):
        flat_args, in_tree = tree_flatten(args)
        if isinstance(in_axes, int) or in_axes is None:
            axes = [in_axes] * len(flat_args)
        else:
            try:
                axes = broadcast_prefix(in_axes if isinstance(in_axes, tuple) else in_axes, args, is_leaf=lambda x: x is None)
            except Exception as err:  # noqa: BLE001 - the pytree library says what did not match
                raise InvalidArgumentError(f"{op}: in_axes {in_axes!r} does not match the arguments' structure "
                                           f"{in_tree} ({err})") from None  # fmt: skip
        paths = [keystr(p) for p, _ in tree_flatten_with_path(args)[0]]
        flat_args = [x if isinstance(x, Array) else from_host(x, op) for x in flat_args]
        axes = [_axis(op, a, x.ndim, f"argument {path or '(root)'}") if a is not None else None
                for a, x, path in zip(axes, flat_args, paths)]  # fmt: skip
        sizes = {path or "(root)": x.shape[a] for a, x, path in zip(axes, flat_args, paths) if a is not None}
        found = set(sizes.values()) | ({axis_size} if axis_size is not None else set())
        if len(found) > 1:
            detail = ", ".join(f"{p}: {s}" for p, s in sizes.items())
            raise InvalidArgumentError(f"{op}: mapped axes have different sizes ({detail}"
                                       f"{f'; axis_size={axis_size}' if axis_size is not None else ''}); they must agree")  # fmt: skip
        if not found:
            raise InvalidArgumentError(f"{op}: no argument is mapped (in_axes={in_axes!r}); pass axis_size to say how many "
                                       "examples there are")  # fmt: skip
        size = found.pop()
        if chunk_size is not None and 0 < chunk_size < size:
            return _chunked(fun, flat_args, axes, in_tree, size, chunk_size, out_axes, axis_name)
        return _run(fun, flat_args, axes, in_tree, size, out_axes, axis_name)

    batched.__name__ = f"vmap({getattr(fun, '__name__', type(fun).__name__)})"
    batched.__doc__ = getattr(fun, "__doc__", None)
    batched.__wrapped__ = fun
    return batched


def _run(fun, flat_args, axes, in_tree, size, out_axes, axis_name):
    with new_trace(BatchTrace, size, axis_name) as trace:
        tracers = [BatchTracer(trace, x, a) for x, a in zip(flat_args, axes)]
        out = fun(*tree_unflatten(in_tree, tracers))
        flat_out, out_tree = tree_flatten(out)
        outs = [trace.full_raise(o if isinstance(o, Array) else from_host(o, "vmap")) for o in flat_out]
        results = [(o.val, o.bdim) for o in outs]
    out_paths = [keystr(p) for p, _ in tree_flatten_with_path(out)[0]]
    if isinstance(out_axes, int) or out_axes is None:
        o_axes = [out_axes] * len(results)
    else:
        o_axes = broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * len(results)), is_leaf=lambda x: x is None)
    final = []
    for (val, bdim), o_axis, path in zip(results, o_axes, out_paths):
        if o_axis is None:
            if bdim is not not_mapped:
                raise InvalidArgumentError(f"vmap: out_axes=None for output {path or '(root)'}, but it depends on the "
                                           "mapped axis; give it an int out_axes")  # fmt: skip
            final.append(val)
            continue
        o_axis = _axis("vmap", o_axis, val.ndim + (bdim is not_mapped), f"output {path or '(root)'}")
        final.append(move_axis(bdim_to_front(val, bdim, size), 0, o_axis))
    return tree_unflatten(out_tree, final)


def _chunked(fun, flat_args, axes, in_tree, size, chunk, out_axes, axis_name):
    pieces = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        part = [x if a is None else _slice_axis(x, a, start, stop) for x, a in zip(flat_args, axes)]
        pieces.append(_run(fun, part, axes, in_tree, stop - start, out_axes, axis_name))
    leaves0, out_tree = tree_flatten(pieces[0])
    all_leaves = [tree_flatten(p)[0] for p in pieces]
    if isinstance(out_axes, int) or out_axes is None:
        o_axes = [out_axes] * len(leaves0)
    else:
        o_axes = broadcast_prefix(out_axes, pieces[0], is_leaf=lambda x: x is None)
    joined = []
    for k, o_axis in enumerate(o_axes):
        if o_axis is None:
            joined.append(all_leaves[0][k])
            continue
        axis = o_axis % all_leaves[0][k].ndim
        joined.append(PRIMITIVES["concatenate"].bind(*[leaves[k] for leaves in all_leaves], dimension=axis))
    return tree_unflatten(out_tree, joined)


def _slice_axis(x, axis, start, stop):
    lo = [0] * x.ndim
    hi = list(x.shape)
    lo[axis], hi[axis] = start, stop
    return PRIMITIVES["slice"].bind(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=None)
