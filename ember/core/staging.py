"""The staging trace: records the primitives applied to its tracers into a `Program`.

Operations on values that are not its tracers are not recorded: they run in
the enclosing context (eagerly, or under an outer transform), and their results
enter the program as constants when a recorded operation uses them. That is
exactly what `linearize` needs (the tangent computation is recorded, the primal
one runs, and its values become the residuals) and what `jit` will build on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core.abstract import ShapedArray
from ember.core.ir import Eqn, Program, Var
from ember.core.primitive import Primitive, Trace, Tracer

__all__ = ["StagingTrace", "StagingTracer"]


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


class StagingTrace(Trace):
    """Records equations; `new_arg` makes the program's inputs, `build` closes it over its outputs."""

    def __init__(self, level: int):
        super().__init__(level)
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        # id(value) -> its variable. Variables, not tracers: a tracer refers to its trace, and a cycle
        # would keep the constants (a linearization's residuals) alive until the garbage collector runs.
        self._const_of: dict[int, Var] = {}

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return StagingTracer(self, aval, var)

    def pure(self, value: Any) -> StagingTracer:
        # A value from outside the program (concrete, or an outer transform's tracer): a constant.
        var = self._const_of.get(id(value))
        if var is None:
            var = self._const_of[id(value)] = Var(value.aval)
            self.constvars.append(var)
            self.consts.append(value)  # also keeps id(value) from being reused while we record
        return StagingTracer(self, value.aval, var)

    def process_primitive(self, primitive: Primitive, tracers: list[StagingTracer], params: dict[str, Any]):
        out = primitive.abstract_eval(*[t._aval for t in tracers], **params)
        avals = out if primitive.multiple_results else [out]
        outvars = [Var(a) for a in avals]
        self.eqns.append(Eqn(primitive, [t.var for t in tracers], params, outvars))
        results = [StagingTracer(self, a, v) for a, v in zip(avals, outvars)]
        return results if primitive.multiple_results else results[0]

    def build(self, outputs: Sequence[Any]) -> tuple[Program, list[Any]]:
        """The program from the inputs made so far to `outputs`, without equations they do not need,
        and the values of its constants."""
        outvars = [self.full_raise(x).var for x in outputs]
        live = set(outvars)
        eqns = []
        for eqn in reversed(self.eqns):
            if any(v in live for v in eqn.outvars):
                eqns.append(eqn)
                live.update(v for v in eqn.inputs if isinstance(v, Var))
        eqns.reverse()
        kept = [(v, c) for v, c in zip(self.constvars, self.consts) if v in live]
        program = Program([v for v, _ in kept], list(self.invars), eqns, outvars)
        return program, [c for _, c in kept]
