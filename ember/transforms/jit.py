"""jit: trace a function once per signature, optimize its program, run generated NumPy code.

``jit(f)(*args)`` looks the arguments' signature up in a bounded LRU cache:
pytree structure, each leaf's shape, dtype and weak type, the static
arguments' values and the x64 mode. On a miss it traces `f` on abstract values
into a program (core/staging.py), optimizes it (core/passes.py) and has the
backend compile it to Python (backends/codegen.py); on a hit it calls that
Python on the arguments' raw buffers. `jit(f).lower(*args).source` is the
generated code, which is what runs.

Under another transform the call is one primitive, `jit_call`, whose operands
are the program's constants and the arguments: its jvp rule differentiates the
program, its batching rule vectorizes it, and a trace that records programs
(jit of jit, `make_ir`) records the called program in place.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import logging
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from ember._traceback import api_boundary, filter_error
from ember.backends.codegen import Compiled
from ember.config import config
from ember.core import dtypes, passes
from ember.core.abstract import ShapedArray
from ember.core.ad import Zero
from ember.core.array import Array, delete, from_host, wrap
from ember.core.batching import axis_rules
from ember.core.ir import Program
from ember.core import devices as _devices
from ember.core.devices import Place
from ember.core.primitive import Primitive, Tracer, _shares_memory, _state, find_top_trace, has_nan, result_place
from ember.core.pytree import keystr, tree_flatten, tree_flatten_with_path, tree_leaves, tree_unflatten
from ember.core.staging import SubProgram, stage
from ember.errors import ArgumentTypeError, DeviceError, InvalidArgumentError
from ember.transforms._args import is_array_like, not_an_array
from ember.transforms._compile import compiled_for, on_place, raw_impls, raw_kernel
from ember.transforms._programs import linearize_program
from ember.transforms.vmap import BatchTracer, vmap

__all__ = ["ClosedProgram", "Lowered", "ShapeDtypeStruct", "disable_jit", "eval_shape", "jit", "jit_call_p", "make_ir",
           "raw_impls"]

log = logging.getLogger("ember.jit")
_new = object.__new__


# --- results of tracing ------------------------------------------------------------------------------


class ShapeDtypeStruct:
    """A shape and a dtype, standing for an array (what `eval_shape` returns).

    >>> ember.ShapeDtypeStruct((2, 3), "float32")
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("dtype", "shape", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))  # fmt: skip

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


class ClosedProgram(NamedTuple):
    """A traced program with the values of its constants (what `make_ir` returns); prints like a jaxpr.

    `in_avals` / `out_avals` describe its flat inputs and outputs; `out_tree` rebuilds the function's
    output structure from the flat outputs."""

    program: Program
    consts: list[Any]
    out_tree: Any

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.program.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.program.outvars]

    @property
    def eqns(self) -> list:
        return self.program.eqns

    def __str__(self) -> str:
        return str(self.program)

    def __repr__(self) -> str:
        return str(self.program)


# --- flattening the arguments ------------------------------------------------------------------------


def _fun_name(fun: Callable) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _param_names(fun: Callable) -> list[str] | None:
    try:
        return [p.name for p in inspect.signature(fun).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    except (TypeError, ValueError):
        return None


def _as_array(x: Any, what: str, op: str) -> Array:
    if isinstance(x, Array):
        return x
    try:
        return from_host(x, op)
    except Exception as err:
        if not is_array_like(x):
            raise not_an_array(x, op, what) from None
        raise ArgumentTypeError(
            f"{op}: {what} is a {type(x).__name__}, which is not an array; pass arrays (or pytrees of arrays) "
            "to a jitted function, or mark the argument static with static_argnums / static_argnames"
        ) from err


_HOST = "host"  # a fast-lane key's mark for a NumPy argument (keyed by its own dtype, not a place)


class _Signature(NamedTuple):
    tree: Any
    avals: tuple[tuple, ...]  # (shape, dtype, weak_type) per leaf
    statics: tuple
    x64: bool
    place: Place  # where the call runs: its committed arguments' device, else the default device


# --- the call primitive ------------------------------------------------------------------------------


class _JitCall(Primitive):
    """``jit_call[program](*consts, *args)``: a jitted function called under another transform."""

    def eager(self, args: Sequence[Array], params: dict[str, Any]) -> list[Array]:
        return _run_compiled(params["sub"], args, result_place("jit", args))


jit_call_p = _JitCall("jit_call", multiple_results=True)
jit_call_p.abstract_eval = lambda *avals, sub: [v.aval for v in sub.program.outvars]


def _jit_call_inline(*args: Any, sub: SubProgram) -> list[Any]:
    return sub(*args)


def _jit_call_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, sub: SubProgram):
    """The jitted function's outputs and tangents as two calls: the primal program, which also returns
    the residuals, and the linear program from the residuals and tangents. On concrete primals (grad
    or jvp of a jitted function) the first runs compiled; the second is recorded by linearize's
    staging (and transposed) or runs compiled in forward mode. Traced once per pattern of nonzero
    tangents."""
    nz = tuple(type(t) is not Zero for t in tangents)
    split = sub.derived.get(("jvp", nz))
    if split is None:
        program = sub.program
        flat = Program([], [*program.constvars, *program.invars], program.eqns, program.outvars)
        lin = linearize_program(flat, nz, name=sub.name)
        split = (lin, SubProgram(lin.primal.program, sub.name), SubProgram(lin.lin.program, sub.name))
        if not any(isinstance(c, Tracer) for c in (*lin.primal.consts, *lin.lin.consts)):
            sub.derived[("jvp", nz)] = split
    lin, primal_sub, lin_sub = split
    n_out = len(sub.program.outvars)
    outs = jit_call_p.bind(*lin.primal.consts, *primals, sub=primal_sub)
    outs, res = outs[:n_out], outs[n_out:]
    touts = iter(jit_call_p.bind(*lin.lin.consts, *res, *[t for t, z in zip(tangents, nz) if z], sub=lin_sub))
    return outs, [next(touts) if z else Zero(o.aval) for o, z in zip(outs, lin.out_nz)]


def _jit_call_batch(trace: Any, vals: Sequence[Any], dims: Sequence[Any], *, sub: SubProgram):
    """vmap of a jitted function: the batched program, traced once per (batch axes, size) and called
    like the original, so that ``vmap(jit(f))`` still runs compiled code. A vmap with an axis name
    (collectives inside must see it) or run in chunks evaluates the program on its own trace instead."""
    if trace.axis_name is not None or trace.chunked:
        outs = [trace.full_raise(o) for o in sub(*[BatchTracer(trace, v, d) for v, d in zip(vals, dims)])]
        return [o.val for o in outs], [o.bdim for o in outs]
    key = ("vmap", tuple(dims), trace.axis_size)
    batched = sub.derived.get(key)
    if batched is None:
        fn = vmap(lambda *xs: sub(*xs), in_axes=tuple(dims), axis_size=trace.axis_size)
        b_program, b_consts, _ = stage(fn, [v.aval for v in vals], "jit")
        batched = (b_consts, SubProgram(b_program, sub.name))
        if not any(isinstance(c, Tracer) for c in b_consts):
            sub.derived[key] = batched
    b_consts, b_sub = batched
    outs = jit_call_p.bind(*b_consts, *vals, sub=b_sub)
    return outs, [0] * len(outs)


jit_call_p.inline = _jit_call_inline
jit_call_p.jvp = _jit_call_jvp
axis_rules[jit_call_p] = _jit_call_batch

# --- compilation -------------------------------------------------------------------------------------


def _run_compiled(sub: SubProgram, args: Sequence[Array], place: Place) -> list[Array]:
    """Run the program compiled for `place` on constants-then-inputs; with ``debug_nans`` on, a NaN in the
    outputs runs the program again equation by equation, so that the primitive that made it raises."""
    fn = compiled_for(sub, place.backend)
    outs = _wrap_outputs(fn(*[on_place(x, place) for x in args]), [v.aval for v in sub.program.outvars], place)
    if config.debug_nans and any(has_nan(o) for o in outs) and not any(has_nan(x) for x in args):
        sub(*args)
    return outs


def _wrap_outputs(outs: Sequence[Any], avals: Sequence[ShapedArray], place: Place) -> list[Array]:
    # Kernels may return NumPy scalars for 0-d results; the program's avals are the contract.
    ndarray, xp = place.ndarray, place.backend.xp
    wrapped = []
    for v, a in zip(outs, avals):
        if type(v) is not ndarray or v.dtype is not a.dtype and v.dtype != a.dtype:
            v = xp.asarray(v, dtype=a.dtype)
        out = _new(Array)
        out._value, out._weak, out._place = v, a.weak_type, place
        wrapped.append(out)
    return wrapped


class _Entry:
    """One cached trace: the optimized program, its constants, and the compiled code."""

    __slots__ = ("const_buffers", "consts", "fn", "out_avals", "out_tree", "place", "program", "single", "sub")

    def __init__(self, program: Program, consts: list[Any], out_tree: Any, name: str, place: Place):
        program, consts = passes.optimize(program, consts)
        self.program = program
        self.consts = consts
        self.out_tree = out_tree
        self.out_avals = [v.aval for v in program.outvars]
        self.sub = SubProgram(program, name)
        self.single = out_tree.num_leaves == 1 and out_tree.num_nodes == 1  # the output is one array
        self.place = place
        concrete = not any(isinstance(c, Tracer) for c in consts)
        self.const_buffers = [on_place(c, place) for c in consts] if concrete else None
        self.fn = self.compiled.fn

    @property
    def compiled(self) -> Compiled:
        return compiled_for(self.sub, self.place.backend)

    def donating(self, donated: tuple[int, ...]) -> Compiled:
        """The program compiled to write results into the buffers of the inputs at `donated` (kept on `sub`)."""
        return compiled_for(self.sub, self.place.backend, donated)

    def run_donating(self, leaves: Sequence[Array], donated: tuple[int, ...]) -> list[Array]:
        """Run with the buffers of `leaves[donated]` given up to the program, and delete those arrays.
        A buffer another array or NumPy array may see (a view, or viewed) is copied first, so only the
        donated arrays ever change."""
        shared = [i for i in donated if not _exclusive(leaves, i)]
        buffers = [x._value for x in leaves]
        for i in shared:
            buffers[i] = buffers[i].copy()
        outs = self.donating(donated).fn(*self.const_buffers, *buffers)
        for i in donated:
            if not leaves[i].is_deleted():  # (an array passed twice)
                delete(leaves[i])
        return _wrap_outputs(outs, self.out_avals, self.place)

    def run(self, leaves: Sequence[Array]) -> list[Array]:
        """The outputs for the arguments' leaves, compiled when nothing is traced, else by binding."""
        if self.const_buffers is not None and (not _state.stack or find_top_trace(leaves, _state.stack) is None):
            if config.debug_nans:
                return _run_compiled(self.sub, [*self.consts, *leaves], self.place)
            place = self.place
            buffers = [x._value if x._place is place else on_place(x, place) for x in leaves]
            return _wrap_outputs(self.fn(*self.const_buffers, *buffers), self.out_avals, place)
        return jit_call_p.bind(*self.consts, *leaves, sub=self.sub)


def _exclusive(leaves: Sequence[Array], i: int) -> bool:
    """Whether only `leaves[i]` holds its buffer: it owns its memory, and no other array, view or
    name refers to it (references: the array's, the local name's and getrefcount's own)."""
    buffer = leaves[i]._value
    if type(buffer) is not np.ndarray or buffer.base is not None or not buffer.flags.writeable:
        return False
    if any(x is leaves[i] for k, x in enumerate(leaves) if k != i):
        return False
    return sys.getrefcount(buffer) == 3


# --- jit -----------------------------------------------------------------------------------------------


class Lowered:
    """A jitted function lowered for particular arguments: its optimized program (`ir`) and the Python
    source the backend generated for it (`source`), which is what runs."""

    def __init__(self, entry: _Entry, donated: tuple[int, ...] = ()):
        self._entry = entry
        self._donated = donated

    @property
    def ir(self) -> ClosedProgram:
        return ClosedProgram(self._entry.program, self._entry.consts, self._entry.out_tree)

    @property
    def source(self) -> str:
        return (self._entry.donating(self._donated) if self._donated else self._entry.compiled).source

    def as_text(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"Lowered(\n{self.source})"


class Jitted:
    """A function wrapped by `jit`. Call it like the function; see `jit`."""

    def __init__(self, fun: Callable, static_argnums: tuple[int, ...], static_argnames: tuple[str, ...],
                 donate_argnums: tuple[int, ...]):  # fmt: skip
        self.fun = fun
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self.donate_argnums = donate_argnums
        self.trace_count = 0
        self._cache: collections.OrderedDict[_Signature, _Entry] = collections.OrderedDict()
        self._fast: dict[tuple, tuple[_Entry, _Signature]] = {}  # flat key of all-Array positional calls
        self._last: tuple[_Signature, list[str]] | None = None
        self._params = _param_names(fun)
        functools.update_wrapper(self, fun, updated=())  # not fun's __dict__: it could overwrite ours
        _JITTED.add(self)

    @property
    def _name(self) -> str:
        return f"jit({_fun_name(self.fun)})"

    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, tuple]:
        """(dynamic args, dynamic kwargs, static values) with static values checked hashable."""
        n = len(args)
        # A static argument not passed positionally is passed by keyword (static_argnames) or defaulted.
        nums = {i % n for i in self.static_argnums if -n <= i < n}
        statics: list[Any] = []
        for i in sorted(nums):
            statics.append((i, self._hashable(args[i], f"static argument {i}{self._named(i)}")))
        for name in self.static_argnames:
            if name in kwargs:
                statics.append((name, self._hashable(kwargs[name], f"static argument {name!r}")))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return dyn_args, dyn_kwargs, tuple(statics)

    def _named(self, i: int) -> str:
        return f" ({self._params[i]})" if self._params is not None and i < len(self._params) else ""

    def _hashable(self, value: Any, what: str) -> Any:
        try:
            hash(value)
        except TypeError:
            raise ArgumentTypeError(
                f"{self._name}: {what} has the unhashable type {type(value).__name__}; static arguments are cache "
                "keys, so they must be hashable (pass a tuple instead of a list, or make the value an array argument)"
            ) from None
        return value

    def _flatten(self, args: tuple, kwargs: dict) -> tuple[_Signature, list[Array], tuple, dict]:
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        arrays, avals, plain = [], [], True
        for i, x in enumerate(leaves):
            if type(x) is Array:  # (the commonest leaf: its slots, not the properties tracers override)
                v = x._value
                avals.append((v.shape, v.dtype, x._weak))
            else:
                if not isinstance(x, Array):
                    try:
                        x = from_host(x, self._name)
                    except Exception:  # noqa: BLE001 - _as_array says which argument, a path built only now
                        x = _as_array(x, self._leaf_path(args, kwargs, i), self._name)
                plain = plain and type(x) is Array
                avals.append((x.shape, x.dtype, x.weak_type))
            arrays.append(x)
        avals = tuple(avals)
        concrete = arrays if plain else [x for x in arrays if not isinstance(x, Tracer)]
        if len({x._place for x in concrete if x._place.committed}) > 1:
            raise self._mixed_devices(args, kwargs, arrays)
        place = result_place(self._name, concrete)
        return _Signature(tree, avals, statics, config.enable_x64, place), arrays, args, kwargs

    def _mixed_devices(self, args: tuple, kwargs: dict, arrays: list[Array]) -> DeviceError:
        where = [f"{path} ({x.dtype}{list(x.shape)}) on {x._place.device}"
                 for path, x in zip(self._paths(args, kwargs), arrays) if not isinstance(x, Tracer) and x._place.committed]
        return DeviceError(f"{self._name}: the arguments are committed to different devices: {', '.join(where)}; "
                           "move them to one device first with ember.device_put(x, device)")

    def _paths(self, args: tuple, kwargs: dict) -> list[str]:
        """Each dynamic leaf's path, like ``argument x['w'][0]`` (computed only when tracing)."""
        dyn_args, dyn_kwargs, _ = self._split(args, kwargs)
        static = {i % len(args) for i in self.static_argnums if -len(args) <= i < len(args)}
        positions = [i for i in range(len(args)) if i not in static]
        paths = []
        for path, _ in tree_flatten_with_path((dyn_args, dyn_kwargs))[0]:
            head, rest = path[0], path[1:]
            if getattr(head, "idx", None) == 0:  # positional
                i = positions[rest[0].idx]
                label = self._params[i] if self._params is not None and i < len(self._params) else f"args[{i}]"
                paths.append(f"argument {label}{keystr(rest[1:])}")
            else:
                paths.append(f"argument {keystr(rest)[2:-2] if len(rest) == 1 else keystr(rest)}")
        return paths

    def _leaf_path(self, args: tuple, kwargs: dict, i: int) -> str:
        try:
            return self._paths(args, kwargs)[i]
        except Exception:  # noqa: BLE001 - only for an error message
            return f"argument leaf {i}"

    def _stage(self, sig: _Signature, args: tuple, kwargs: dict, op: str) -> ClosedProgram:
        """Trace the function on abstract values of this signature (static values passed as they are)."""
        statics = dict(sig.statics)
        store: dict[str, Any] = {}

        def flat(*tracers: Any) -> list[Any]:
            dyn_args, dyn_kwargs = tree_unflatten(sig.tree, tracers)
            it = iter(dyn_args)
            full = [statics[i] if i in statics else next(it) for i in range(len(args))]
            call_kwargs = {**dyn_kwargs, **{k: v for k, v in statics.items() if isinstance(k, str)}}
            leaves, store["tree"] = tree_flatten(self.fun(*full, **call_kwargs))
            return [_as_array(x, f"output leaf {i}", op) for i, x in enumerate(leaves)]

        in_avals = [ShapedArray(s, d, w) for s, d, w in sig.avals]
        program, consts, _ = stage(flat, in_avals, op, self._paths(args, kwargs))
        return ClosedProgram(program, consts, store["tree"])

    def _trace(self, sig: _Signature, args: tuple, kwargs: dict) -> _Entry:
        closed = self._stage(sig, args, kwargs, "jit")
        self.trace_count += 1
        place = self._with_constants(sig.place, closed.consts)
        return _Entry(closed.program, closed.consts, closed.out_tree, _fun_name(self.fun), place)

    def _with_constants(self, place: Place, consts: Sequence[Any]) -> Place:
        """Where the call runs once the arrays the function closes over count too: a committed constant
        pulls uncommitted arguments to its device, as a committed argument does."""
        for c in consts:
            if type(c) is Array and c._place.committed and c._place is not place:
                if place.committed:
                    raise DeviceError(f"{self._name}: the function closes over an array ({c.dtype}{list(c.shape)}) "
                                      f"committed to {c.device}, but its arguments are committed to {place.device}; "
                                      "move them to one device first with ember.device_put(x, device)")  # fmt: skip
                place = c._place
        return place

    def _lookup(self, args: tuple, kwargs: dict) -> tuple[_Entry, list[Array], _Signature]:
        sig, arrays, args, kwargs = self._flatten(args, kwargs)
        entry = self._cache.get(sig)
        if entry is not None:
            self._cache.move_to_end(sig)
            return entry, arrays, sig
        if config.explain_retrace and self._last is not None:
            log.warning("%s", self._explain(self._last, sig, self._paths(args, kwargs)))
        entry = self._trace(sig, args, kwargs)
        self._last = (sig, self._paths(args, kwargs)) if config.explain_retrace else None
        if entry.const_buffers is not None:  # a program closing over traced values is not reused
            self._cache[sig] = entry
            while len(self._cache) > config.jit_cache_size:
                self._cache.popitem(last=False)
                self._fast.clear()
        return entry, arrays, sig

    def _explain(self, last: tuple[_Signature, list[str]], sig: _Signature, paths: list[str]) -> str:
        old, _ = last
        why = []
        if old.x64 != sig.x64:
            why.append(f"enable_x64 changed from {old.x64} to {sig.x64}")
        if old.statics != sig.statics:
            was, now = dict(old.statics), dict(sig.statics)
            for k in sorted(set(was) | set(now), key=str):
                if was.get(k, "<absent>") != now.get(k, "<absent>"):
                    label = f"static argument {k}{self._named(k)}" if isinstance(k, int) else f"static argument {k!r}"
                    why.append(f"{label} changed from {was.get(k, '<absent>')!r} to {now.get(k, '<absent>')!r}")
        if old.place is not sig.place:
            why.append(f"the device changed from {_place_str(old.place)} to {_place_str(sig.place)}")
        if old.tree != sig.tree:
            why.append(f"the arguments' pytree structure changed from {old.tree} to {sig.tree}")
        else:
            for path, a, b in zip(paths, old.avals, sig.avals):
                if a != b:
                    why.append(f"{path} changed from {_aval_str(a)} to {_aval_str(b)}")
        reason = "; ".join(why) or "the signature is new (it was evicted from the cache, or traced with values " \
                                   "closed over from another transform)"
        return f"{self._name}: retracing because {reason}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            # The fast lane: positional Array arguments, no transform active. The key is what the
            # signature would be (a flat tuple of leaves has one pytree structure per length).
            # NumPy arrays (data batches usually are) take it too: keyed by their own dtype, copied into the
            # signature's dtype (a copy, as from_host makes: a result may be the input buffer itself).
            if not kwargs and not _state.stack and not self.donate_argnums:
                key: list[Any] = [config.enable_x64, _devices.current.place]
                for x in args:
                    kind = type(x)
                    if kind is Array:
                        key.append((x._value.shape, x._value.dtype, x._weak, x._place))
                    elif kind is np.ndarray:
                        key.append((x.shape, x.dtype, _HOST))
                    else:
                        break
                else:
                    hit = self._fast.get(tuple(key))
                    if hit is not None and not (config.disable_jit or config.debug_nans):
                        entry, sig = hit
                        self._cache.move_to_end(sig)
                        values = [x._value if type(x) is Array else np.array(x, a[1]) for x, a in zip(args, sig.avals)]
                        outs = _wrap_outputs(entry.fn(*entry.const_buffers, *values), entry.out_avals, entry.place)
                        return outs[0] if entry.single else tree_unflatten(entry.out_tree, outs)
            if config.disable_jit:
                return self.fun(*args, **kwargs)
            entry, arrays, sig = self._lookup(args, kwargs)
            if not kwargs and sig in self._cache and all(type(x) in (Array, np.ndarray) for x in args):
                if all(_shares_memory(x._place, entry.place) for x in args if type(x) is Array):  # (else run() moves them)
                    self._fast[(sig.x64, _devices.current.place,
                                *[(*a, x._place) if type(x) is Array else (x.shape, x.dtype, _HOST)
                                  for a, x in zip(sig.avals, args)])] = (entry, sig)
            donated = self._donated_leaves(args) if self.donate_argnums else ()
            if donated and entry.const_buffers is not None and not _state.stack and not config.debug_nans:
                # Not under a transform (as in JAX), nor with debug_nans on (it may run the program again).
                return tree_unflatten(entry.out_tree, entry.run_donating(arrays, donated))
            return tree_unflatten(entry.out_tree, entry.run(arrays))
        except Exception as err:  # a traceback boundary (ember/_traceback.py), inline: no wrapper's cost
            filter_error(err)
            raise

    def _donated_leaves(self, args: tuple) -> tuple[int, ...]:
        """Positions among the dynamic leaves of the arguments in donate_argnums (positional ones)."""
        n = len(args)
        static = {i % n for i in self.static_argnums if -n <= i < n}
        donate = {i % n for i in self.donate_argnums if -n <= i < n}
        positions, start = [], 0
        for i, a in enumerate(args):
            if i in static:
                continue
            count = len(tree_leaves(a))
            if i in donate:
                positions += range(start, start + count)
            start += count
        return tuple(positions)

    @api_boundary
    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The optimized program and generated source for these arguments (traced if not cached).

        >>> print(ember.jit(lambda x: x * 2.0 + 1.0).lower(enp.ones(3)).source)
        _l0 = np.float32(2.0)
        _l1 = np.float32(1.0)
        def program(a):
            b = ops.mul(a, _l0)
            c = np.add(b, _l1, out=b)
            return [c]
        """
        return Lowered(self._lookup(args, kwargs)[0], self._donated_leaves(args) if self.donate_argnums else ())

    def clear_cache(self) -> None:
        """Forget every trace (the next call traces again)."""
        self._cache.clear()
        self._fast.clear()

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<{self._name}>"


def _place_str(place: Place) -> str:
    return f"{place.device} ({'committed' if place.committed else 'uncommitted'})"


# The fast lane of every jitted function skips the device checks; a device taken away empties them all.
_JITTED: weakref.WeakSet[Jitted] = weakref.WeakSet()


def _forget_fast_lanes(name: str, value: Any) -> None:
    if name == "num_cpu_devices":
        for jitted in list(_JITTED):
            jitted._fast.clear()


config.on_update(_forget_fast_lanes)


def _aval_str(aval: tuple) -> str:
    shape, dtype, weak = aval
    return ShapedArray(shape, dtype, weak).str_short()


def _int_tuple(value: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, int) else tuple(value)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise ArgumentTypeError(f"jit: {what} takes ints, got {value!r}")
    return items


def jit(fun: Callable, static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] = ()) -> Jitted:  # fmt: skip
    """Compile `fun`: trace it once per argument signature, optimize the program, run generated NumPy code.

    A signature is the arguments' pytree structure, every leaf's shape, dtype and weak type, the
    static arguments' values and the x64 mode; a call with a new one traces again (`trace_count`
    counts the traces; ``ember.config.update("explain_retrace", True)`` logs why). Python control
    flow on traced values raises ConcretizationError: use `lax.cond`/`lax.while_loop`/`enp.where`, or
    make the argument static. `jit` composes with every transform, in any order.

    The compiled code allocates its large buffers (64 KiB and up) once: intermediates stay allocated
    between calls, and a returned buffer is written again once the caller has dropped the result
    (as a caching allocator does). That memory is released with the traces (`clear_cache()`, or
    when the jitted function is dropped).

    Args:
      fun: a pure function of arrays (pytrees of arrays).
      static_argnums / static_argnames: arguments passed by value into the trace (hashable; a new
        value traces again), for Python control flow on them.
      donate_argnums: positional arguments the caller gives up (pytrees of arrays): the program may
        write its results into their buffers (a training step's parameters and optimizer state), and
        the arrays are deleted (using one raises DeletedArrayError; `x.is_deleted()`). A buffer that
        another array shares (an eager reshape's view) or NumPy holds (`np.asarray(x)`) is copied
        first, so nothing else changes. Under another transform donation does nothing, as in JAX.

    Returns:
      A function like `fun`, with `.lower(*args).source` (the generated Python), `.trace_count` and
      `.clear_cache()`.

    >>> f = ember.jit(lambda x, n: x ** n, static_argnums=1)
    >>> f(enp.arange(3.0), 2)
    Array([0., 1., 4.], dtype=float32)
    >>> f.trace_count
    1
    """
    if not callable(fun):
        raise ArgumentTypeError(f"jit: expected a function, got {type(fun).__name__}")
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    names = tuple(static_argnames)
    if not all(isinstance(n, str) for n in names):
        raise ArgumentTypeError(f"jit: static_argnames takes strings, got {static_argnames!r}")
    nums = _int_tuple(static_argnums, "static_argnums")
    params = _param_names(fun)
    if params is not None:  # a name given for a positional parameter is static in either spelling (as in JAX)
        nums = tuple(sorted({*nums, *(params.index(n) for n in names if n in params)}))
        names = tuple(sorted({*names, *(params[i] for i in nums if 0 <= i < len(params))}))
    donate = _int_tuple(donate_argnums, "donate_argnums")
    if set(donate) & set(nums):
        raise InvalidArgumentError(
            f"jit: argument(s) {sorted(set(donate) & set(nums))} are both static and donated; a static argument "
            "is a Python value passed into the trace and has no buffer to donate: drop it from donate_argnums"
        )
    return Jitted(fun, nums, names, donate)


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Run jitted functions as plain Python inside the block (for print debugging and pdb).

    >>> @ember.jit
    ... def f(x):
    ...     print(type(x).__name__, x.tolist())  # under jit, x is a tracer: .tolist() would raise
    ...     return x * 2
    >>> with ember.disable_jit():
    ...     y = f(enp.ones(2))
    Array [1.0, 1.0]
    """
    with config._temporarily("disable_jit", bool(disable)):
        yield


# --- tracing without running ---------------------------------------------------------------------------


def _trace_for(op: str, fun: Callable, args: tuple, kwargs: dict, static_argnums: Sequence[int] = ()) -> ClosedProgram:
    jitted = jit(fun, static_argnums=tuple(static_argnums))
    sig, _, args, kwargs = jitted._flatten(args, kwargs)
    return jitted._stage(sig, args, kwargs, op)


def make_ir(fun: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., ClosedProgram]:
    """A function that traces `fun` on its arguments and returns the program (printable, like a jaxpr).

    >>> print(ember.make_ir(lambda x: enp.sin(x) * 2.0)(enp.ones(3)))
    { lambda a:~f32[] ; b:f32[3]. let
        c:f32[3] = sin b
        d:f32[3] = mul c a
      in (d) }
    """
    nums = _int_tuple(static_argnums, "static_argnums")

    @api_boundary
    def traced(*args: Any, **kwargs: Any) -> ClosedProgram:
        return _trace_for("make_ir", fun, args, kwargs, nums)

    return traced


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of `fun`'s outputs for these arguments, computed without running it.

    Arguments may be arrays or anything with `shape` and `dtype` (`ember.ShapeDtypeStruct`).

    >>> ember.eval_shape(lambda x: x @ x.T, ember.ShapeDtypeStruct((3, 4), "float32"))
    ShapeDtypeStruct(shape=(3, 3), dtype=float32)
    """
    leaves, tree = tree_flatten((args, kwargs))
    stand_ins = [_placeholder(x) for x in leaves]
    args, kwargs = tree_unflatten(tree, stand_ins)
    closed = _trace_for("eval_shape", fun, args, kwargs)
    return tree_unflatten(closed.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals])


def _placeholder(x: Any) -> Any:
    """An abstract stand-in becomes a zero-strided array of its shape (no memory), for tracing only."""
    if isinstance(x, Array) or not (hasattr(x, "shape") and hasattr(x, "dtype")) or isinstance(x, np.ndarray):
        return x
    dtype = dtypes.canonicalize(x.dtype, "eval_shape")
    return wrap(np.broadcast_to(np.zeros((), dtype), tuple(x.shape)), bool(getattr(x, "weak_type", False)))

