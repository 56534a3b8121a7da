"""Programs as values of control-flow primitives and of jit's call, and the transforms applied to them.

A control-flow primitive (cond, while, scan) holds its functions as *closed* programs: staged with
`core.staging.stage`, with what the function closed over hoisted to leading inputs, so that those
values are operands of the equation (an outer transform sees them) and the program itself has no
constants. The helpers below build such programs and apply the transforms to them:

- `linearize_program`: a program split into a primal program that also returns residuals and a
  linear program from (residuals, input tangents) to output tangents (linearize's partial
  evaluation, done on abstract values);
- `transpose_program`: a linear program's transpose;
- `batch_program`: a program vectorized along a vmap's axis;
- `run`: a program evaluated on raw buffers, by binding for its first calls and compiled (the
  generated NumPy of jit) once it has run a few times, which is what loops do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ember.core.abstract import ShapedArray
from ember.core.ad import UndefinedPrimal, Zero, instantiate
from ember.core.array import Array, from_host, wrap
from ember.core.batching import bdim_to_front
from ember.core.ir import Program, Var, eval_program
from ember.core.primitive import Tracer, trace_stack
from ember.core.staging import StagingTracer, SubProgram, stage
from ember.transforms._compile import active_backend, compiled_for, compiled_sub
from ember.transforms.linearize import backward_pass, linearize_flat

__all__ = ["Closed", "Fn", "batch_program", "close", "close_all", "linearize_program", "run", "transpose_program"]


class Fn(SubProgram):
    """A closed program held as a parameter of a control-flow equation: no constants, so its inputs
    are the equation's operands (or a part of them). `cache` keeps what rules derive from it (its
    linearization, its compiled code's call count)."""

    __slots__ = ("cache", "out_avals")

    def __init__(self, program: Program, name: str):
        assert not program.constvars, "control-flow programs take their constants as inputs"
        super().__init__(program, name)
        self.cache: dict[Any, Any] = {}
        self.out_avals = [v.aval for v in program.outvars]

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.program.invars]

    def __call__(self, *args: Any) -> list[Any]:
        """Evaluate by binding each equation (transforms see every step)."""
        return eval_program(self.program, [], args)


class Closed(NamedTuple):
    """A program whose first ``len(consts)`` inputs are the values `consts` (what it closed over)."""

    program: Program
    consts: list[Any]

    def fn(self, name: str) -> Fn:
        return Fn(self.program, name)

    def __call__(self, *args: Any) -> list[Any]:
        return eval_program(self.program, [], [*self.consts, *args])


def close(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray], name: str | None = None) -> Closed:
    """Stage `fun` (flat Arrays in, a flat sequence out; Python scalars allowed) on abstract inputs,
    its constants hoisted to leading inputs.

    >>> closed = close(lambda x: [x * 2.0], [ShapedArray((3,), np.dtype("float32"))])
    >>> len(closed.program.invars), len(closed.consts)   # the weak 2.0, then x
    (2, 1)
    """

    def flat(*args: Any) -> list[Any]:
        return [x if isinstance(x, Array) else from_host(x, name or "lax") for x in fun(*args)]

    program, consts, _ = stage(flat, in_avals, name)
    return Closed(Program([], [*program.constvars, *program.invars], program.eqns, program.outvars), consts)


def close_all(funs: Sequence[Callable[..., Sequence[Any]]], in_avals: Sequence[ShapedArray],
              name: str | None = None) -> tuple[list[Program], list[Any]]:  # fmt: skip
    """Stage several functions of the same inputs (branches) with common constants: every program
    takes all the constants (each using its own), then the inputs. A `Closed` is taken as it is."""
    closed = [f if isinstance(f, Closed) else close(f, in_avals, name) for f in funs]
    consts = [c for cl in closed for c in cl.consts]
    programs, start = [], 0
    for cl in closed:
        k = len(cl.consts)
        before = [Var(c.aval) for c in consts[:start]]
        after = [Var(c.aval) for c in consts[start + k :]]
        invars = [*before, *cl.program.invars[:k], *after, *cl.program.invars[k:]]
        programs.append(Program([], invars, cl.program.eqns, cl.program.outvars))
        start += k
    return programs, consts


def aval_of(x: Any) -> ShapedArray:
    return x.aval


def concrete(values: Sequence[Any]) -> bool:
    """Whether every value is a concrete Array (no transform owns it)."""
    return not any(isinstance(v, Tracer) for v in values)


# --- running on raw buffers ------------------------------------------------------------------------------

# A program runs by binding (eager kernels) for its first calls and compiled after that: compiling costs
# as much as a few dozen eager calls, which loops of many steps repay and a single call does not.
COMPILE_AFTER = 4


def _coerce(value: Any, aval: ShapedArray) -> np.ndarray:
    if type(value) is not np.ndarray or value.dtype != aval.dtype:
        value = np.asarray(value, dtype=aval.dtype)
    return value


def run(fn: Fn, buffers: Sequence[Any]) -> list[Any]:
    """`fn` on raw buffers (its inputs in order); its outputs as raw buffers of its output dtypes
    (NumPy scalars allowed: generated code hands them on as they are)."""
    backend = active_backend()
    if backend.platform != "cpu":  # inside a GPU program: its compiler's code from the first call, on its buffers
        xp = backend.xp
        outs = compiled_for(fn, backend).fn(*[xp.asarray(b) if isinstance(b, np.ndarray) else b for b in buffers])
        return [o if getattr(o, "dtype", None) == a.dtype else xp.asarray(o, dtype=a.dtype) for o, a in zip(outs, fn.out_avals)]
    compiled = fn.compiled
    if compiled is None:
        calls = fn.cache.get("calls", 0)
        if calls < COMPILE_AFTER:
            fn.cache["calls"] = calls + 1
            args = [wrap(_coerce(b, v.aval), v.aval.weak_type) for b, v in zip(buffers, fn.program.invars, strict=True)]
            return [o._value for o in eval_program(fn.program, [], args)]
        compiled = compiled_sub(fn)
    outs = compiled.fn(*buffers)
    for i, (o, a) in enumerate(zip(outs, fn.out_avals)):
        if getattr(o, "dtype", None) != a.dtype:  # a kernel that promoted differently, or a Python scalar
            outs[i] = np.asarray(o, dtype=a.dtype)
    return outs


def buffers(values: Sequence[Any]) -> list[np.ndarray]:
    """The raw buffers of concrete Arrays (constants of derived programs are concrete)."""
    return [v._value for v in values]


def wrap_all(bufs: Sequence[Any], avals: Sequence[ShapedArray], place: Any = None) -> list[Array]:
    """Raw buffers as Arrays of `avals` on `place` (the default device's uncommitted one when None)."""
    if place is None or place.ndarray is np.ndarray:
        return [wrap(_coerce(b, a), a.weak_type, place) for b, a in zip(bufs, avals, strict=True)]
    xp, ndarray = place.backend.xp, place.ndarray  # a GPU's buffers (NumPy scalars become device arrays)
    return [wrap(b if type(b) is ndarray and b.dtype == a.dtype else xp.asarray(b, dtype=a.dtype), a.weak_type, place)
            for b, a in zip(bufs, avals, strict=True)]  # fmt: skip


# --- linearization -------------------------------------------------------------------------------------


class Linearized(NamedTuple):
    """A program split for reverse mode (see `linearize_program`)."""

    primal: Closed  # (*args) -> (*outs, *residuals)
    n_res: int
    res_input: list[int | None]  # per residual: the input it is (passed through unchanged), or None
    lin: Closed  # (*residuals, *tangents of the nonzero inputs) -> tangents of the out_nz outputs
    out_nz: list[bool]

    @property
    def res_avals(self) -> list[ShapedArray]:
        outs = self.primal.program.outvars
        return [v.aval for v in outs[len(outs) - self.n_res :]]


def linearize_program(program: Program, nz: Sequence[bool], force: Sequence[bool] | None = None,
                      name: str | None = None) -> Linearized:  # fmt: skip
    """Split `program` (no constants) for differentiation with respect to the inputs marked `nz`.

    The primal program computes the outputs and the residuals: what the tangent computation needs
    of the primal one. The linear program maps (residuals, the nz inputs' tangents) to the output
    tangents that are not symbolically zero (`out_nz`), with zeros for the outputs in `force` too.
    This is `linearize` done while staging: the primal operations are recorded into one program,
    the tangent operations into another, and the values the second uses of the first are residuals.
    """
    nz = list(nz)
    store: dict[str, Any] = {}

    def primal_fn(*args: Any) -> list[Any]:
        mine = trace_stack()[-1]

        def f(*diff: Any) -> list[Any]:
            it = iter(diff)
            return eval_program(program, [], [next(it) if z else a for a, z in zip(args, nz)])

        outs, _, lin = linearize_flat(f, [a for a, z in zip(args, nz) if z])
        res = [c if isinstance(c, StagingTracer) and c._trace is mine else None for c in lin.consts]
        store["lin"], store["known"] = lin, [c for c, r in zip(lin.consts, res) if r is None]
        store["is_res"] = [r is not None for r in res]
        store["res_input"] = [next((i for i, a in enumerate(args) if a is r), None) for r in res if r is not None]
        return [*outs, *[r for r in res if r is not None]]

    primal = close(primal_fn, [v.aval for v in program.invars], name)
    lin, known = store["lin"], store["known"]
    n_res = len(store["res_input"])
    out_avals = [v.aval for v in program.outvars]
    force = [False] * len(out_avals) if force is None else list(force)
    out_nz = [a or f for a, f in zip(lin.out_nonzero, force)]
    is_res = store["is_res"]
    t_avals = [a.aval for a, z in zip(program.invars, nz) if z]

    def lin_fn(*args: Any) -> list[Any]:
        res_it, known_it = iter(args[:n_res]), iter(known)
        consts = [next(res_it) if r else next(known_it) for r in is_res]
        outs = iter(eval_program(lin.program, consts, args[n_res:]))
        got = [next(outs) if z else Zero(a) for a, z in zip(out_avals, lin.out_nonzero)]
        return [instantiate(g) for g, z in zip(got, out_nz) if z]

    res_avals = [v.aval for v in primal.program.outvars[len(out_avals) :]]
    linear = close(lin_fn, [*res_avals, *t_avals], name)
    return Linearized(primal, n_res, store["res_input"], linear, out_nz)


# --- transposition -------------------------------------------------------------------------------------


def transpose_program(program: Program, linear: Sequence[bool], ct_nz: Sequence[bool],
                      name: str | None = None) -> Closed:  # fmt: skip
    """The transpose of `program` (no constants), linear in the inputs marked `linear`: a program
    from (the other inputs, the nonzero output cotangents) to the cotangents of the linear inputs
    (zeros where none flows)."""
    known_vars = [v for v, lin in zip(program.invars, linear) if not lin]
    lin_vars = [v for v, lin in zip(program.invars, linear) if lin]
    split = Program(known_vars, lin_vars, program.eqns, program.outvars)
    out_avals = [v.aval for v in program.outvars]
    n_known = len(known_vars)

    def fn(*args: Any) -> list[Any]:
        cts = iter(args[n_known:])
        full = [next(cts) if nz else Zero(a) for a, nz in zip(out_avals, ct_nz)]
        return [instantiate(c) for c in backward_pass(split, list(args[:n_known]), full)]

    return close(fn, [*[v.aval for v in known_vars], *[a for a, nz in zip(out_avals, ct_nz) if nz]], name)


def linear_positions(args: Sequence[Any], linear: Sequence[bool]) -> list[bool]:
    """Which operands a transpose rule treats as linear: undefined ones, and those a rule marked
    linear (a zero tangent instantiated as a known array is still a tangent)."""
    return [type(a) is UndefinedPrimal or lin for a, lin in zip(args, linear, strict=True)]


def cotangents(cts: Sequence[Any]) -> tuple[list[bool], list[Any]]:
    """(which output cotangents are nonzero, their values)."""
    nz = [type(c) is not Zero and c is not None for c in cts]
    return nz, [c for c, z in zip(cts, nz) if z]


# --- batching ------------------------------------------------------------------------------------------


def batched_aval(aval: ShapedArray, dim: int | None, size: int) -> ShapedArray:
    if dim is None:
        return aval
    return ShapedArray((*aval.shape[:dim], size, *aval.shape[dim:]), aval.dtype, aval.weak_type)


def batch_program(program: Program, trace: Any, in_dims: Sequence[int | None], force: Sequence[bool] | None = None,
                  name: str | None = None) -> tuple[Closed, list[int | None]]:  # fmt: skip
    """`program` (no constants) vectorized along `trace`'s axis, for inputs batched along `in_dims`
    (None: unbatched). Outputs come batched along axis 0, or unbatched where no input reaches them
    and `force` does not ask for the axis; returns the closed program and its outputs' batch axes."""
    from ember.transforms.vmap import BatchTracer, _entered

    size = trace.axis_size
    n_out = len(program.outvars)
    force = [False] * n_out if force is None else list(force)
    store: dict[str, Any] = {}

    def fn(*vals: Any) -> list[Any]:
        with _entered(trace) as t:
            ins = [BatchTracer(t, v, d) for v, d in zip(vals, in_dims, strict=True)]
            outs = [t.full_raise(o) for o in eval_program(program, [], ins)]
            results, dims = [], []
            for o, f in zip(outs, force):
                if o.bdim is None and not f:
                    results.append(o.val)
                    dims.append(None)
                else:
                    results.append(bdim_to_front(o.val, o.bdim, size))
                    dims.append(0)
        store["dims"] = dims
        return results

    in_avals = [batched_aval(v.aval, d, size) for v, d in zip(program.invars, in_dims, strict=True)]
    closed = close(fn, in_avals, name)
    return closed, store["dims"]


def batch_fixed_point(program: Program, trace: Any, const_dims: Sequence[int | None], carry_mapped: Sequence[bool],
                      rest_dims: Sequence[int | None] = (), name: str | None = None) -> list[bool]:  # fmt: skip
    """Which carries of a loop body ``(consts, carry, rest) -> (carry, ...)`` are batched: those batched
    on entry and those the body makes batched, until nothing changes."""
    mapped = list(carry_mapped)
    n = len(mapped)
    while True:
        dims = [*const_dims, *[0 if m else None for m in mapped], *rest_dims]
        _, out_dims = batch_program(program, trace, dims, name=name)
        new = [m or d is not None for m, d in zip(mapped, out_dims[:n])]
        if new == mapped:
            return mapped
        mapped = new
