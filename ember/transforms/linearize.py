"""Reverse mode's two halves: `linearize_flat` (partial evaluation of the JVP into a linear
program) and `backward_pass` (transposition of that program).

Linearizing runs the function under a JVP trace whose input tangents are inputs
of a program being staged. Primal operations involve no staged value, so they
run (eagerly, or under an outer transform) and their results that the tangent
computation needs become the program's constants: the residuals. Tangent
operations are recorded. The program is linear in its inputs, so it can be
transposed equation by equation, last to first: `backward_pass` walks it with a
loop (no recursion, so chains of any length work) and can drop each residual
after its last use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ember.core import dtypes
from ember.core.abstract import ShapedArray
from ember.core.ad import UndefinedPrimal, Zero, add_tangents
from ember.core.ir import Literal, Program, Var, eval_program
from ember.core.primitive import new_trace
from ember.core.staging import StagingTrace
from ember.errors import EmberError
from ember.transforms.jvp import jvp_flat

__all__ = ["Linearized", "backward_pass", "linearize_flat"]


class Linearized(NamedTuple):
    """The linear map of a linearized function: `program` from the inexact inputs' tangents to the
    outputs' nonzero tangents, closed over `consts` (the residuals)."""

    program: Program
    consts: list[Any]
    in_avals: list[ShapedArray]
    in_linear: list[bool]  # which inputs have a tangent (inexact dtypes); the others' is zero
    out_avals: list[ShapedArray]
    out_nonzero: list[bool]  # which outputs' tangents are in the program; the others' is zero

    def jvp(self, tangents: Sequence[Any]) -> list[Any]:
        """The output tangents (Zero where symbolically zero) for input tangents."""
        args = [t for t, lin in zip(tangents, self.in_linear) if lin]
        outs = iter(eval_program(self.program, self.consts, args))
        return [next(outs) if nz else Zero(a) for a, nz in zip(self.out_avals, self.out_nonzero)]

    def transpose(self, cts: Sequence[Any], free_residuals: bool = False) -> list[Any]:
        """The input cotangents (Zero where nothing flows back) for output cotangents."""
        cts = [c for c, nz in zip(cts, self.out_nonzero) if nz]
        ins = iter(backward_pass(self.program, self.consts, cts, free_residuals))
        return [next(ins) if lin else Zero(a) for a, lin in zip(self.in_avals, self.in_linear)]


def linearize_flat(fn: Callable[..., Sequence[Any]], primals: Sequence[Any], n_aux: Callable[[], int] = lambda: 0):
    """Evaluate `fn` (flat Arrays in, flat Arrays out) and linearize it at `primals`; the last
    ``n_aux()`` outputs (known once `fn` has run) are auxiliary: returned, not differentiated.
    Returns (outputs, aux, Linearized)."""
    with new_trace(StagingTrace) as staging:
        in_linear = [dtypes.is_inexact(p.dtype) for p in primals]
        tangents = [staging.new_arg(p.aval) if lin else Zero(p.aval) for p, lin in zip(primals, in_linear)]
        outs, out_tangents = jvp_flat(fn, primals, tangents)
        n_out = len(outs) - n_aux()
        outs, aux, out_tangents = outs[:n_out], outs[n_out:], out_tangents[:n_out]
        out_nonzero = [type(t) is not Zero for t in out_tangents]
        program, consts = staging.build([t for t in out_tangents if type(t) is not Zero])
    lin = Linearized(program, consts, [p.aval for p in primals], in_linear, [o.aval for o in outs], out_nonzero)
    return outs, aux, lin


def backward_pass(program: Program, consts: list[Any], cts: Sequence[Any], free_residuals: bool = False) -> list[Any]:
    """Transpose the linear `program`: cotangents of its outputs in, of its inputs out (Zero where
    none flows). With `free_residuals`, each constant is dropped after its last use (and `consts`
    is emptied), so a one-shot gradient does not hold every residual until the end."""
    ct_env: dict[Var, Any] = {}

    def add_ct(v: Var | Literal, ct: Any) -> None:
        if type(v) is Var and ct is not None and type(ct) is not Zero:
            ct_env[v] = add_tangents(ct_env.get(v), ct)

    for v, ct in zip(program.outvars, cts, strict=True):
        add_ct(v, ct)
    const_env = dict(zip(program.constvars, consts, strict=True))
    last_use = _last_uses(program) if free_residuals else {}
    if free_residuals:
        consts.clear()

    for i in range(len(program.eqns) - 1, -1, -1):
        eqn = program.eqns[i]
        outs = [ct_env.pop(v, None) for v in eqn.outvars]
        if any(c is not None for c in outs):
            prim = eqn.primitive
            if prim.transpose is None:
                raise EmberError(f"{prim.name}: no transpose rule; it is not linear, or reverse mode does not support it yet")
            args = [v.array if type(v) is Literal else const_env[v] if v in const_env else UndefinedPrimal(v.aval)
                    for v in eqn.inputs]  # fmt: skip
            outs = [Zero(v.aval) if c is None else c for v, c in zip(eqn.outvars, outs)]
            in_cts = prim.transpose(outs if prim.multiple_results else outs[0], *args, **eqn.params)
            for v, arg, ct in zip(eqn.inputs, args, in_cts, strict=True):
                if type(arg) is UndefinedPrimal:
                    add_ct(v, ct)
        for v in last_use.get(i, ()):
            del const_env[v]
    results = [ct_env.pop(v, None) for v in program.invars]
    return [Zero(v.aval) if ct is None else ct for v, ct in zip(program.invars, results)]


def _last_uses(program: Program) -> dict[int, list[Var]]:
    """For each equation, the constants that no earlier equation uses (their last use going backward)."""
    first: dict[Var, int] = {}
    consts = set(program.constvars)
    for i, eqn in enumerate(program.eqns):
        for v in eqn.inputs:
            if type(v) is Var and v in consts and v not in first:
                first[v] = i
    by_eqn: dict[int, list[Var]] = {}
    for v, i in first.items():
        by_eqn.setdefault(i, []).append(v)
    return by_eqn
