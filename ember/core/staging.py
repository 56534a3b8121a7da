"""The staging trace: records the primitives applied to its tracers into a `Program`.

Operations on values that are not its tracers are not recorded: they run in
the enclosing context (eagerly, or under an outer transform), and their results
enter the program as constants when a recorded operation uses them. That is
exactly what `linearize` needs (the tangent computation is recorded, the primal
one runs, and its values become the residuals) and what `jit` will build on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.core.abstract import ShapedArray
from ember.core.ir import Eqn, Program, Var, eval_program, is_effectful
from ember.core.primitive import Primitive, Trace, Tracer, custom_jvp_call, custom_vjp_call, new_trace
from ember.errors import ConcretizationError

__all__ = ["StagingTrace", "StagingTracer", "SubProgram", "custom_jvp_call_p", "custom_vjp_call_p", "stage"]


class StagingTracer(Tracer):
    """A value of the program being recorded: its abstract value and its variable."""

    __slots__ = ("_aval", "var")

    def __init__(self, trace: StagingTrace, aval: ShapedArray, var: Var):
        self._trace = trace
        self._aval = aval
        self.var = var

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def _concrete(self, what: str):
        trace = self._trace
        if trace.name is None:
            return super()._concrete(what)
        origins = trace.origins_of(self.var)
        where = f"depends on {', '.join(origins)}" if origins else "is computed inside the function"
        raise ConcretizationError(
            f"{what} needs a concrete value, but got a value traced by {trace.name}: {self._aval.str_short()}, which "
            f"{where}. Under {trace.name} only shapes and dtypes are known while tracing; for a choice that depends "
            "on values use ember.numpy.where, lax.cond, lax.switch or lax.while_loop, or mark the argument static "
            "(static_argnums / static_argnames)"
        )


class StagingTrace(Trace):
    """Records equations; `new_arg` makes the program's inputs, `build` closes it over its outputs."""

    def __init__(self, level: int, name: str | None = None):
        super().__init__(level)
        self.name = name  # the user-facing transform staging here ("jit"), for error messages; None inside autodiff
        self.origins: dict[Var, str] = {}  # input variable -> where it came from ("argument x['w']")
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        # id(value) -> its variable. Variables, not tracers: a tracer refers to its trace, and a cycle
        # would keep the constants (a linearization's residuals) alive until the garbage collector runs.
        self._const_of: dict[int, Var] = {}

    def new_arg(self, aval: ShapedArray, origin: str | None = None) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        if origin is not None:
            self.origins[var] = origin
        return StagingTracer(self, aval, var)

    def origins_of(self, var: Var) -> list[str]:
        """The origins of the inputs `var` was computed from (walking the recorded equations back)."""
        needed, found = {var}, []
        for eqn in reversed(self.eqns):
            if any(v in needed for v in eqn.outvars):
                needed.update(v for v in eqn.inputs if isinstance(v, Var))
        for v in self.invars:
            if v in needed and v in self.origins:
                found.append(self.origins[v])
        return found

    def pure(self, value: Any) -> StagingTracer:
        # A value from outside the program (concrete, or an outer transform's tracer): a constant.
        var = self._const_of.get(id(value))
        if var is None:
            var = self._const_of[id(value)] = Var(value.aval)
            self.constvars.append(var)
            self.consts.append(value)  # also keeps id(value) from being reused while we record
        return StagingTracer(self, value.aval, var)

    def process_primitive(self, primitive: Primitive, tracers: list[StagingTracer], params: dict[str, Any]):
        if primitive.inline is not None:  # a call (jit's): record what it calls instead
            return primitive.inline(*tracers, **params)
        out = primitive.abstract_eval(*[t._aval for t in tracers], **params)
        avals = out if primitive.multiple_results else [out]
        outvars = [Var(a) for a in avals]
        self.eqns.append(Eqn(primitive, [t.var for t in tracers], params, outvars))
        results = [StagingTracer(self, a, v) for a, v in zip(avals, outvars)]
        return results if primitive.multiple_results else results[0]

    # Custom rules survive staging by jit (a named trace): the call is recorded as one equation holding
    # the function's program and the rule (a Python function), so that a transform applied to the
    # program later (grad of a jitted function) uses the rule. What the function closes over becomes
    # operands of the equation. Autodiff's own stagings (unnamed) record linear programs that are
    # transposed next, so there the function is inlined.

    def process_custom_jvp_call(self, fun, jvp, tracers: list[StagingTracer]) -> list[StagingTracer]:
        if self.name is None:
            return fun(*tracers)
        sub, consts = _stage_call(fun, tracers, self.name)
        return Primitive.bind(custom_jvp_call_p, *consts, *tracers, sub=sub, jvp=jvp)  # recorded, not re-dispatched

    def process_custom_vjp_call(self, fun, fwd, bwd, tracers: list[StagingTracer], out_trees) -> list[StagingTracer]:
        if self.name is None:
            return fun(*tracers)
        sub, consts = _stage_call(fun, tracers, self.name)
        return Primitive.bind(custom_vjp_call_p, *consts, *tracers, sub=sub, fwd=fwd, bwd=bwd, out_trees=out_trees)

    def build(self, outputs: Sequence[Any]) -> tuple[Program, list[Any]]:
        """The program from the inputs made so far to `outputs`, without equations they do not need,
        and the values of its constants."""
        outvars = [self.full_raise(x).var for x in outputs]
        live = set(outvars)
        eqns = []
        for eqn in reversed(self.eqns):
            if any(v in live for v in eqn.outvars) or is_effectful(eqn):
                eqns.append(eqn)
                live.update(v for v in eqn.inputs if isinstance(v, Var))
        eqns.reverse()
        kept = [(v, c) for v, c in zip(self.constvars, self.consts) if v in live]
        program = Program([v for v, _ in kept], list(self.invars), eqns, outvars)
        return program, [c for _, c in kept]


def stage(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray], name: str | None = None,
          origins: Sequence[str] | None = None) -> tuple[Program, list[Any], list[Any]]:  # fmt: skip
    """Record `fun` (flat Arrays in, a flat sequence of Arrays out) on abstract inputs.

    Returns ``(program, consts, outputs)``: the program from `in_avals` to the outputs, the values of
    its constants (what `fun` closed over, or computed without touching its inputs), and `fun`'s own
    outputs (tracers of the finished trace: only their avals are of use). `name` and `origins`
    (one per input, like ``"argument x['w']"``) make errors on traced values say where they came from.

    >>> program, consts, _ = stage(lambda x: [x * 2.0], [ShapedArray((3,), np.dtype("float32"))])
    >>> print(program)
    { lambda a:~f32[] ; b:f32[3]. let
        c:f32[3] = mul b a
      in (c) }
    """
    with new_trace(StagingTrace, name) as trace:
        args = [trace.new_arg(a, None if origins is None else origins[i]) for i, a in enumerate(in_avals)]
        outs = list(fun(*args))
        program, consts = trace.build(outs)
    return program, consts, outs


class SubProgram:
    """A program held as a parameter of an equation (a custom rule's function): compared by identity,
    evaluated by binding (`__call__`), compiled by the backend once (`compiled`, set by jit)."""

    __slots__ = ("compiled", "derived", "name", "program")

    def __init__(self, program: Program, name: str):
        self.program = program
        self.name = name
        self.compiled: Any = None
        self.derived: dict[Any, Any] = {}  # programs transforms made from this one (jit's batched versions)

    @property
    def num_consts(self) -> int:
        return len(self.program.constvars)

    def __call__(self, *args: Any) -> list[Any]:
        """Evaluate on constants then inputs (by binding each equation: transforms see every step)."""
        k = self.num_consts
        return eval_program(self.program, args[:k], args[k:])

    def __repr__(self) -> str:
        return f"<{self.name}: {len(self.program.eqns)} equations>"


def _stage_call(fun: Callable[..., Sequence[Any]], tracers: Sequence[StagingTracer],
                name: str | None) -> tuple[SubProgram, list[Any]]:  # fmt: skip
    program, consts, _ = stage(fun, [t.aval for t in tracers], name)
    return SubProgram(program, getattr(fun, "__name__", "fun")), consts


class _CustomCall(Primitive):
    """A staged custom_jvp / custom_vjp call. Operands: the function's constants, then its inputs.
    Binding hands the call back to the active transforms as the custom call it was
    (`core.primitive.custom_jvp_call`), so each transform applies its own treatment of custom rules."""

    def __init__(self, name: str):
        super().__init__(name, multiple_results=True)
        self.abstract_eval = lambda *avals, sub, **_: [v.aval for v in sub.program.outvars]

    def bind(self, *args: Any, **params: Any):
        sub = params["sub"]
        consts, args = args[: sub.num_consts], list(args[sub.num_consts :])

        def fun(*xs: Any) -> list[Any]:
            return sub(*consts, *xs)

        fun.__name__ = sub.name
        if self is custom_jvp_call_p:
            return custom_jvp_call(fun, params["jvp"], args)
        return custom_vjp_call(fun, params["fwd"], params["bwd"], args, params["out_trees"])


custom_jvp_call_p = _CustomCall("custom_jvp_call")
custom_vjp_call_p = _CustomCall("custom_vjp_call")
