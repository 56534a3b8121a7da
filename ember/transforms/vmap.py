"""Vectorization: the batching trace and `vmap`.

A `BatchTracer` holds a value with one extra axis, the batch axis, at position
`bdim` (or `not_mapped`: the same value for every example). Applying a
primitive to batch tracers calls the primitive's batching rule, which computes
every example at once; a primitive without a rule (one a user registered)
falls back to a loop over the batch, with a warning naming it.

Custom differentiation rules stay custom under vmap, as in JAX: a custom_jvp
(or checkpointed) call is handed on to the enclosing transforms as a custom_jvp
call of the batched function whose rule is the batched jvp rule, and a
custom_vjp call as one with batched fwd and bwd. So ``grad(vmap(f))`` runs the
user's rules, each on a whole batch at once.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ember._traceback import api_boundary
from ember.core.abstract import ShapedArray
from ember.core.ad import Zero
from ember.core.array import Array
from ember.core.batching import axis_rules, bdim_to_front, move_axis, not_mapped
from ember.core.primitive import (
    PRIMITIVES,
    Primitive,
    Trace,
    Tracer,
    custom_jvp_call,
    custom_vjp_call,
    new_trace,
    push_trace,
)
from ember.core.pytree import broadcast_prefix, keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten
from ember.core.transfer import follow
from ember.errors import ConcretizationError, InvalidArgumentError
from ember.transforms import _memory
from ember.transforms._args import as_leaf_array

__all__ = ["BatchTrace", "BatchTracer", "batch_flat", "batched_bwd", "check_chunk_size", "detached_trace", "vmap"]


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
    def __init__(self, level: int, axis_size: int, axis_name: Any = None, chunked: bool = False):
        super().__init__(level)
        self.axis_size = axis_size
        self.axis_name = axis_name
        self.chunked = chunked  # this trace runs one chunk of the axis (vmap's chunk_size): collectives refuse it

    def pure(self, value: Any) -> BatchTracer:
        return BatchTracer(self, value, not_mapped)

    def process_primitive(self, primitive: Primitive, tracers: list[BatchTracer], params: dict[str, Any]):
        vals = [t.val for t in tracers]
        dims = [t.bdim for t in tracers]
        named = axis_rules.get(primitive)
        if named is not None:  # a collective (or custom_lin, remat_lin): it must see this trace, mapped operands or not
            out, out_dims = named(self, vals, dims, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, d) for o, d in zip(out, out_dims, strict=True)]
            return BatchTracer(self, out, out_dims)
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

    # Custom rules: the call goes on to the enclosing transforms with its function and rules batched.
    # Those run at once (while this trace is alive), on this trace's own tracers, so that a function
    # closing over batched values sees them as such; bwd runs later, in the backward pass, which
    # enters this trace again (`_entered`). Results go back with their batch axis first (or unmapped).

    def process_custom_jvp_call(self, fun, jvp, tracers: list[BatchTracer]) -> list[BatchTracer]:
        dims = [t.bdim for t in tracers]
        store: dict[str, Any] = {}
        batched_fun = _batched_now(self, fun, dims, store)

        def batched_jvp(primals: list, tangents: list) -> tuple[list, list]:
            ps = _lift(self, primals, dims)
            # A tangent has its primal's shape, so its batch axis is where its primal's is.
            ts = [Zero(p.aval) if type(t) is Zero else BatchTracer(self, t, d) for p, t, d in zip(ps, tangents, dims)]
            p_out, t_out = jvp(ps, ts)
            outs, touts, out_dims = [], [], []
            for p, t in zip(p_out, t_out, strict=True):
                p = self.full_raise(p)
                if type(t) is Zero:
                    val, d = _front(p)
                    outs.append(val)
                    touts.append(Zero(val.aval))
                else:
                    t = self.full_raise(t)
                    d = not_mapped if p.bdim is not_mapped and t.bdim is not_mapped else 0
                    outs.append(p.val if d is not_mapped else bdim_to_front(p.val, p.bdim, self.axis_size))
                    touts.append(t.val if d is not_mapped else bdim_to_front(t.val, t.bdim, self.axis_size))
                out_dims.append(d)
            store["out_dims"] = out_dims
            return outs, touts

        outs = custom_jvp_call(batched_fun, _renamed(batched_jvp, jvp), [t.val for t in tracers])
        return [BatchTracer(self, o, d) for o, d in zip(outs, store["out_dims"], strict=True)]

    def process_custom_vjp_call(self, fun, fwd, bwd, tracers: list[BatchTracer], out_trees) -> list[BatchTracer]:
        dims = [t.bdim for t in tracers]
        in_avals = [t.val.aval for t in tracers]
        store: dict[str, Any] = {}
        batched_fun = _batched_now(self, fun, dims, store)

        def batched_fwd(*primals: Any) -> tuple[list, list]:
            outs, res = fwd(*_lift(self, primals, dims))
            outs, store["out_dims"] = _fronts(self, outs)
            res = [self.full_raise(r) for r in res]
            store["res_dims"] = [r.bdim for r in res]
            return outs, [r.val for r in res]

        # bwd lives on in the linearized program: it holds dims, avals and this trace, never a value.
        targets = list(zip(dims, in_avals))

        def batched_bwd_(res: Sequence[Any], cts: Sequence[Any]) -> list:
            return batched_bwd(bwd, self, res, store["res_dims"], cts, store["out_dims"], targets)

        outs = custom_vjp_call(batched_fun, _renamed(batched_fwd, fwd), _renamed(batched_bwd_, bwd),
                               [t.val for t in tracers], out_trees)  # fmt: skip
        return [BatchTracer(self, o, d) for o, d in zip(outs, store["out_dims"], strict=True)]


def _renamed(fn: Callable, like: Callable) -> Callable:
    fn.__name__ = fn.__qualname__ = getattr(like, "__name__", "fun")
    return fn


def _lift(trace: BatchTrace, vals: Sequence[Any], dims: Sequence[int | None]) -> list[BatchTracer]:
    return [BatchTracer(trace, v, d) for v, d in zip(vals, dims, strict=True)]


def _front(t: BatchTracer) -> tuple[Any, int | None]:
    """The value of `t` with its batch axis first (0), or unmapped (None)."""
    if t.bdim is not_mapped:
        return t.val, not_mapped
    return move_axis(t.val, t.bdim, 0), 0


def _fronts(trace: BatchTrace, outs: Sequence[Any]) -> tuple[list, list]:
    pairs = [_front(trace.full_raise(o)) for o in outs]
    return [v for v, _ in pairs], [d for _, d in pairs]


def _batched_now(trace: BatchTrace, fun: Callable, dims: list, store: dict) -> Callable:
    """`fun` on values batched along `dims`, run at once on `trace`; records its outputs' batch axes."""

    def batched(*vals: Any) -> list:
        outs, store["out_dims"] = _fronts(trace, fun(*_lift(trace, vals, dims)))
        return outs

    return _renamed(batched, fun)


def _unbatched(aval: ShapedArray, bdim: int | None) -> ShapedArray:
    if bdim is not_mapped:
        return aval
    return ShapedArray(aval.shape[:bdim] + aval.shape[bdim + 1 :], aval.dtype, aval.weak_type)


def detached_trace(axis_size: int, axis_name: Any = None, chunked: bool = False) -> BatchTrace:
    """A batching trace that is not running, for `batch_flat` / `batched_bwd` to enter when no vmap's
    trace is at hand (a batching rule knows only the axis size)."""
    trace = BatchTrace(0, axis_size, axis_name, chunked)
    trace.alive = False
    return trace


@contextlib.contextmanager
def _entered(trace: BatchTrace) -> Iterator[BatchTrace]:
    """A batching trace on top of the stack, for running a function that a rule kept for later.

    A vmap that has returned (the usual case: the backward pass runs after the vmap inside grad) is
    entered again: its trace is pushed back, so a function closing over its batched values (a remat
    block using the example's mask) still finds them batched. While it is running (lower in the
    stack, under the transforms that now call the function) a new trace of the same axis stands in.
    """
    if trace.alive:
        with new_trace(BatchTrace, trace.axis_size, trace.axis_name, trace.chunked) as fresh:
            yield fresh
        return
    with push_trace(trace):
        yield trace


def batch_flat(fun: Callable[..., Sequence[Any]], trace: BatchTrace, in_dims: Sequence[int | None]) -> Callable:
    """`fun` (flat Arrays in, flat Arrays out) vectorized along `trace`'s axis, for rules that call it
    later (a remat block re-run in the backward pass): the result takes the inputs batched along
    `in_dims` and returns every output with its batch axis first (broadcast where unmapped). It
    holds the trace (its axis size and name), never a value.

    >>> batch_flat(lambda x: [x * 2.0], detached_trace(3), [0])(enp.ones((3, 2)))[0].shape
    (3, 2)
    """

    def batched(*vals: Any) -> list:
        with _entered(trace) as t:
            outs = [t.full_raise(o) for o in fun(*_lift(t, vals, in_dims))]
            return [bdim_to_front(o.val, o.bdim, t.axis_size) for o in outs]

    return _renamed(batched, fun)


def batched_bwd(bwd: Callable, trace: BatchTrace, res: Sequence[Any], res_dims: Sequence[int | None],
                cts: Sequence[Any], ct_dims: Sequence[int | None],
                targets: Sequence[tuple[int | None, ShapedArray] | None]) -> list:  # fmt: skip
    """A custom_vjp `bwd(res, cts) -> input cotangents` run on a whole batch of `trace`'s axis:
    residuals and output cotangents (None or Zero: none) batched along `res_dims` and `ct_dims`.
    Input i's cotangent comes back laid out as ``targets[i] = (bdim, aval)`` says: summed over the
    examples where that input is unmapped (shared by every example), Zero where bwd gives none;
    None where targets[i] is None (or missing).
    """
    size = trace.axis_size
    with _entered(trace) as t:
        r = _lift(t, res, res_dims)
        c = [ct if ct is None else Zero(_unbatched(ct.aval, d)) if type(ct) is Zero else BatchTracer(t, ct, d)
             for ct, d in zip(cts, ct_dims, strict=True)]  # fmt: skip
        ct_in = bwd(r, c)
        out: list[Any] = []
        for i, ct in enumerate(ct_in):
            target = targets[i] if i < len(targets) else None
            if target is None:
                out.append(None)
            elif ct is None or type(ct) is Zero:
                out.append(Zero(target[1]))
            else:
                ct = t.full_raise(ct)
                x = bdim_to_front(ct.val, ct.bdim, size)
                dim = target[0]
                out.append(PRIMITIVES["reduce_sum"].bind(x, axes=(0,)) if dim is not_mapped else move_axis(x, 0, dim))
        return out


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


class _Shown:
    """An argument leaf as error messages show it (its dtype and shape, not its values)."""

    __slots__ = ("text",)

    def __init__(self, x: Any):
        shape = getattr(x, "shape", None)
        dtype = getattr(x, "dtype", None)
        self.text = f"{dtype}{list(shape)}" if shape is not None and dtype is not None else type(x).__name__

    def __repr__(self) -> str:
        return self.text


def _prefix_error(what: str, axes: Any, tree: Any, hint: str = "") -> InvalidArgumentError:
    # Re-run the match on the tree with its arrays shown as dtype[shape], so the message stays short.
    shown = tree_map(lambda x: x if isinstance(x, _Shown) else _Shown(x), tree)
    try:
        broadcast_prefix(axes, shown, is_leaf=lambda x: x is None)
        detail = ""
    except Exception as err:  # noqa: BLE001 - the pytree library says what did not match
        detail = f": {err}"
    return InvalidArgumentError(f"vmap: {what} {axes!r} is not a pytree prefix of {shown!r}{detail}{hint}")


def _in_axis(axis: Any, x: Array, path: str) -> int | None:
    if axis is None:
        return None
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise InvalidArgumentError(f"vmap: in_axes must be ints or None, got {axis!r} for {path}")
    if x.ndim == 0:
        if path.startswith("kwargs"):
            raise InvalidArgumentError(f"vmap: {path} is a scalar (shape ()), but keyword arguments are mapped along "
                                       "axis 0; pass it positionally with in_axes None, or close over it "
                                       "(functools.partial) to give every example the same value")  # fmt: skip
        raise InvalidArgumentError(f"vmap: in_axes {axis} for {path}, but it is a scalar (shape ()) with no axis to map "
                                   "over; give it in_axes None (the same value for every example)")  # fmt: skip
    if not -x.ndim <= axis < x.ndim:
        raise InvalidArgumentError(f"vmap: in_axes {axis} is out of range for {path} of shape {x.shape} (rank {x.ndim}: "
                                   f"valid axes are {-x.ndim} to {x.ndim - 1})")  # fmt: skip
    return axis % x.ndim


def _out_axis(axis: Any, rank: int, path: str) -> int:
    # `rank` is the per-example rank: the batch axis can go in front of any axis or last.
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise InvalidArgumentError(f"vmap: out_axes must be ints or None, got {axis!r} for {path}")
    if not -(rank + 1) <= axis <= rank:
        raise InvalidArgumentError(f"vmap: out_axes {axis} is out of range for {path} of rank {rank} per example "
                                   f"(valid: {-(rank + 1)} to {rank})")  # fmt: skip
    return axis % (rank + 1)


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         chunk_size: int | str | None = None, axis_name: Any = None) -> Callable:  # fmt: skip
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
        memory, same result; collectives over this vmap's axis need the whole axis and refuse it).
        ``"auto"``: the fewest chunks whose estimated peak memory fits ``ember.config.memory_budget``
        (default: half the free memory), from the liveness of the batched program traced abstractly
        (ember/transforms/_memory.py), decided once per function and argument shapes; one chunk when
        the whole batch fits (collectives then work), `MemoryBudgetError` when one example does not.
        The decision for some arguments: ``vmap(f, chunk_size="auto").plan(*args)``.
      axis_name: a name for the mapped axis, for collectives inside `fun` (``lax.psum(x, name)``,
        ``lax.pmean``, ``lax.pmax``, ``lax.pmin``, ``lax.all_gather``, ``lax.axis_index``).

    Bad specifications raise `ember.errors.InvalidArgumentError` (a ValueError) naming the argument
    (``args[1]['w']``) and the sizes found; Python control flow on a value that differs between
    examples raises `ConcretizationError` (use ``enp.where`` or ``lax.cond``).

    >>> ember.vmap(lambda x, y: x @ y, in_axes=(0, None))(enp.ones((5, 3)), enp.ones(3)).shape
    (5,)
    >>> ember.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(enp.arange(3.0))
    Array([-1.,  0.,  1.], dtype=float32)
    >>> ember.config.update("memory_budget", 100_000)   # bytes (None: half the free memory)
    >>> f = ember.vmap(lambda x: enp.outer(x, x).sum(), chunk_size="auto")
    >>> print(f.plan(enp.ones((10, 100))))
    vmap(<lambda>) on 10 examples: in 5 chunks of 2 examples; estimated peak 80.8 kB per chunk (+ 40 B for the result) against a budget of 100.0 kB
    >>> f(enp.ones((10, 100)))[:3]
    Array([10000., 10000., 10000.], dtype=float32)
    >>> ember.config.update("memory_budget", None)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if axis_size is not None and (not isinstance(axis_size, int) or isinstance(axis_size, bool) or axis_size < 0):
        raise InvalidArgumentError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")
    check_chunk_size("vmap", chunk_size)

    def prepare(args, kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise InvalidArgumentError(
                f"vmap: in_axes={in_axes!r} has {len(in_axes)} {'entry' if len(in_axes) == 1 else 'entries'}, but the "
                f"function was called with {len(args)} positional argument(s); give in_axes one entry per positional "
                f"argument (or one int/None for all); the arguments are {tree_map(_Shown, args)!r}"
                + ("; keyword arguments take no entry: they are always mapped along axis 0" if kwargs else ""))
        flat_args, in_tree = tree_flatten((args, kwargs))
        n_pos = in_tree.children()[0].num_leaves if kwargs else len(flat_args)
        if isinstance(in_axes, int) or in_axes is None:
            axes = [in_axes] * n_pos
        else:
            try:
                axes = broadcast_prefix(in_axes, args, is_leaf=lambda x: x is None)
            except Exception:  # noqa: BLE001 - _prefix_error says what did not match
                hint = ("" if isinstance(in_axes, tuple) else
                        "; in_axes has one entry per positional argument: for one argument write in_axes=(spec,)")  # fmt: skip
                raise _prefix_error("in_axes", in_axes, args, hint) from None
        # Keyword arguments are mapped along their leading axis (in_axes covers positional ones), as in JAX.
        axes = [*axes, *[0] * (len(flat_args) - n_pos)]
        paths = [f"args{keystr(p)}" for p, _ in tree_flatten_with_path(args)[0]]
        paths += [f"kwargs{keystr(p)}" for p, _ in tree_flatten_with_path(kwargs)[0]]
        flat_args = [x if isinstance(x, Array) else as_leaf_array(x, "vmap", path) for x, path in zip(flat_args, paths)]
        axes = [_in_axis(a, x, path) for a, x, path in zip(axes, flat_args, paths)]
        mapped = [(path, x, a) for a, x, path in zip(axes, flat_args, paths) if a is not None]
        found = {x.shape[a] for _, x, a in mapped} | ({axis_size} if axis_size is not None else set())
        if len(found) > 1:
            detail = ", ".join(f"{path} (shape {x.shape}, in_axes {a}) has size {x.shape[a]}" for path, x, a in mapped)
            given = f"; axis_size={axis_size} was given" if axis_size is not None else ""
            raise InvalidArgumentError(f"vmap: the mapped axes have different sizes: {detail}{given}; every mapped axis "
                                       "must have the same size (the number of examples)")  # fmt: skip
        if not found:
            raise InvalidArgumentError(f"vmap: no argument is mapped (in_axes={in_axes!r}); pass axis_size to say how many "
                                       "examples there are")  # fmt: skip
        return flat_args, axes, in_tree, found.pop()

    def plan(*args, **kwargs) -> _memory.ChunkPlan:
        """How ``chunk_size="auto"`` splits a call with these arguments (decided as a call would)."""
        flat_args, axes, in_tree, size = prepare(args, kwargs)
        return _auto_plan(fun, flat_args, axes, in_tree, size, out_axes, axis_name)

    def batched(*args, **kwargs):
        flat_args, axes, in_tree, size = prepare(args, kwargs)
        chunk = chunk_size
        if chunk == "auto":
            chunk = _auto_plan(fun, flat_args, axes, in_tree, size, out_axes, axis_name).chunk
        if chunk is not None and chunk < size:
            return _chunked(fun, flat_args, axes, in_tree, size, chunk, out_axes, axis_name)
        return _run(fun, flat_args, axes, in_tree, size, out_axes, axis_name)

    batched = api_boundary(batched)
    batched.plan = api_boundary(plan)
    batched.__name__ = f"vmap({getattr(fun, '__name__', type(fun).__name__)})"
    batched.__doc__ = getattr(fun, "__doc__", None)
    batched.__wrapped__ = fun
    return batched


def check_chunk_size(op: str, chunk_size: Any) -> None:
    """`InvalidArgumentError` unless `chunk_size` is a positive int, "auto" or None."""
    if chunk_size is None or chunk_size == "auto" and isinstance(chunk_size, str):
        return
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise InvalidArgumentError(f"{op}: chunk_size must be a positive int, \"auto\" (the fewest chunks that fit "
                                   f"ember.config.memory_budget) or None (no chunking), got {chunk_size!r}")  # fmt: skip


def _key(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return repr(x)


def _auto_plan(fun, flat_args, axes, in_tree, size, out_axes, axis_name) -> _memory.ChunkPlan:
    """The chunking of this call that fits the memory budget (see _memory.plan_chunks), decided once per
    function, argument avals, axes and budget."""
    budget = _memory.memory_budget(flat_args)
    avals = [x.aval for x in flat_args]
    name = getattr(fun, "_memory_name", None) or f"vmap({getattr(fun, '__name__', type(fun).__name__)})"
    key = (getattr(fun, "_memory_key", None), tuple((a.shape, a.dtype, a.weak_type) for a in avals), tuple(axes),
           in_tree, _key(out_axes), _key(axis_name), size, budget)  # fmt: skip

    mapped = [k for k, d in enumerate(axes) if d is not None]

    def chunk_peak(c: int) -> tuple[int, int]:
        chunk_avals = [ShapedArray(a.shape[:d] + (c,) + a.shape[d + 1 :], a.dtype, a.weak_type)
                       for a, d in ((avals[k], axes[k]) for k in mapped)]  # fmt: skip

        # Unmapped arguments go in as they are (Python control flow on them works, as in the call);
        # the mapped ones as stand-ins of a chunk's shape. Unchunked: a collective sees the chunk as its axis.
        def one_chunk(*vals):
            args = list(flat_args)
            for k, v in zip(mapped, vals):
                args[k] = v
            return _run(fun, args, axes, in_tree, c, out_axes, axis_name)

        return _memory.trace_peak(one_chunk, chunk_avals)

    owner = getattr(fun, "_memory_owner", fun)
    return _memory.cached_plan(owner, key, lambda: _memory.plan_chunks(name, size, chunk_peak, budget))


def _out_axes_for(out_axes: Any, out_tree: Any, shown: Callable[[], list[Any]]) -> list[Any]:
    """One out_axes entry per output leaf; `shown()` gives the leaves as an error message shows them."""
    n = out_tree.num_leaves
    if isinstance(out_axes, int) or out_axes is None:
        return [out_axes] * n
    node = out_tree.node_data()
    if isinstance(out_axes, tuple) and node is not None and node[0] is tuple and len(out_tree.children()) != len(out_axes):
        count = len(out_tree.children())
        raise InvalidArgumentError(
            f"vmap: out_axes={out_axes!r} has {len(out_axes)} {'entry' if len(out_axes) == 1 else 'entries'}, but the "
            f"function returned a tuple of {count} output(s) {tree_unflatten(out_tree, shown())!r}; give out_axes one "
            "entry per output (or one int/None for all)")
    try:
        return broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * n), is_leaf=lambda x: x is None)
    except Exception:  # noqa: BLE001 - _prefix_error says what did not match
        raise _prefix_error("out_axes", out_axes, tree_unflatten(out_tree, shown())) from None


def _run(fun, flat_args, axes, in_tree, size, out_axes, axis_name, chunked=False):
    with new_trace(BatchTrace, size, axis_name, chunked) as trace:
        tracers = [BatchTracer(trace, x, a) for x, a in zip(flat_args, axes)]
        args, kwargs = tree_unflatten(in_tree, tracers)
        out = fun(*args, **kwargs)
        flat_out, out_tree = tree_flatten(out)
        outs = [trace.full_raise(o if isinstance(o, Array) else as_leaf_array(o, "vmap", "an output leaf")) for o in flat_out]
        results = [(o.val, o.bdim) for o in outs]
    out_paths = [f"output{keystr(p)}" for p, _ in tree_flatten_with_path(out)[0]]
    o_axes = _out_axes_for(out_axes, out_tree, lambda: [_Shown(o.aval) for o in outs])  # per-example shapes
    final = []
    for (val, bdim), o_axis, path in zip(results, o_axes, out_paths):
        if o_axis is None:
            if bdim is not not_mapped:
                raise InvalidArgumentError(f"vmap: out_axes=None for {path}, but it differs between the {size} examples "
                                           "(it depends on the mapped axis); give it an int out_axes, or return a "
                                           "value that does not depend on the mapped axis (e.g. a psum)")  # fmt: skip
            final.append(val)
            continue
        o_axis = _out_axis(o_axis, val.ndim - (bdim is not not_mapped), path)
        final.append(move_axis(bdim_to_front(val, bdim, size), 0, o_axis))
    # Outputs made from no input (axis_index's iota, constants) go where the inputs are, as jit's do.
    return tree_unflatten(out_tree, follow("vmap", final, *flat_args))


def _chunked(fun, flat_args, axes, in_tree, size, chunk, out_axes, axis_name):
    pieces = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        part = [x if a is None else _slice_axis(x, a, start, stop) for x, a in zip(flat_args, axes)]
        pieces.append(_run(fun, part, axes, in_tree, stop - start, out_axes, axis_name, chunked=True))
    leaves0, out_tree = tree_flatten(pieces[0])
    all_leaves = [tree_flatten(p)[0] for p in pieces]
    o_axes = _out_axes_for(out_axes, out_tree, lambda: [_Shown(x) for x in leaves0])
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
