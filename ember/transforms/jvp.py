"""Forward mode: the JVP trace and `jvp`.

A `JVPTracer` carries a primal value and its tangent (possibly a symbolic
`Zero`). Applying a primitive to JVP tracers calls the primitive's jvp rule,
which computes the output and its tangent with further primitives; when every
input tangent is zero the rule is skipped and the output tangent is zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.core import dtypes
from ember.core.abstract import ShapedArray
from ember.core.ad import Zero
from ember.core.primitive import Primitive, Trace, Tracer, custom_jvp_call, custom_vjp_call, new_trace
from ember.errors import EmberError
from ember.transforms.custom import custom_lin

__all__ = ["JVPTrace", "JVPTracer", "jvp_flat"]


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return self.primal.aval

    def _concrete(self, what: str):
        # As in JAX, Python control flow on a value being differentiated is fine when its primal
        # value is concrete (outside jit): the derivative is that of the branch taken.
        return self.primal._concrete(what)


class JVPTrace(Trace):
    def pure(self, value: Any) -> JVPTracer:
        return JVPTracer(self, value, Zero(value.aval))

    def process_primitive(self, primitive: Primitive, tracers: list[JVPTracer], params: dict[str, Any]):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            out = primitive.bind(*primals, **params)
            if primitive.multiple_results:
                return [JVPTracer(self, o, Zero(o.aval)) for o in out]
            return JVPTracer(self, out, Zero(out.aval))
        if primitive.jvp is None:
            raise EmberError(f"{primitive.name}: no differentiation rule (jvp) is defined for this primitive")
        primal_out, tangent_out = primitive.jvp(primals, tangents, **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, _checked(t, p)) for p, t in zip(primal_out, tangent_out, strict=True)]
        return JVPTracer(self, primal_out, _checked(tangent_out, primal_out))

    def process_custom_jvp_call(self, fun, jvp, tracers: list[JVPTracer]) -> list[JVPTracer]:
        # The rule replaces differentiating `fun`; outer transforms differentiate the rule itself.
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            return [self._constant(o) for o in custom_jvp_call(fun, jvp, primals)]
        primals_out, tangents_out = jvp(primals, tangents)
        return [JVPTracer(self, p, _checked(t, p)) for p, t in zip(primals_out, tangents_out, strict=True)]

    def process_custom_vjp_call(self, fun, fwd, bwd, tracers: list[JVPTracer], out_trees) -> list[JVPTracer]:
        # fwd computes the outputs and residuals; the output tangents are a linear primitive of the
        # input tangents (custom_lin) that linearize stages and whose transpose calls bwd.
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            return [self._constant(o) for o in custom_vjp_call(fun, fwd, bwd, primals, out_trees)]
        outs, res = fwd(*primals)
        tangents_out = custom_lin(res, tangents, bwd, outs)
        return [JVPTracer(self, p, _checked(t, p)) for p, t in zip(outs, tangents_out, strict=True)]

    def _constant(self, value: Any) -> JVPTracer:
        # A function that closes over this trace's tracers may return them: keep their tangents.
        if isinstance(value, JVPTracer) and value._trace is self:
            return value
        return JVPTracer(self, value, Zero(value.aval))


def _checked(tangent: Any, primal: Any) -> Any:
    # Integer and bool outputs have no tangent space: their tangent is a symbolic zero.
    if not dtypes.is_inexact(primal.dtype):
        return Zero(primal.aval)
    return tangent


def jvp_flat(fn: Callable[..., Sequence[Any]], primals: Sequence[Any], tangents: Sequence[Any]):
    """Run `fn` on JVP tracers; returns (trace-independent) output primals and tangents.

    `fn` takes and returns flat lists of Arrays; tangents may be `Zero`s.
    """
    with new_trace(JVPTrace) as trace:
        outs = fn(*[JVPTracer(trace, p, t) for p, t in zip(primals, tangents, strict=True)])
        outs = [trace.full_raise(o) for o in outs]
        return [o.primal for o in outs], [o.tangent for o in outs]
