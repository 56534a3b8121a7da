"""ember's intermediate representation: programs of primitive equations.

A `Program` is straight-line code, like a jaxpr::

    { lambda a:f32[3] ; b:f32[3]. let
        c:f32[3] = mul b a
        d:f32[] = reduce_sum[axes=(0,)] c
      in (d) }

Constants (`constvars`, before the ``;``) are values the program closes over:
for a linearized function these are the residuals of the forward pass. Inputs
(`invars`) and outputs (`outvars`) follow. Every equation names a primitive,
its operands (variables or literals), its static parameters and the variables
it defines. `linearize` produces programs and `jit` will too; `eval_program`
runs one by binding each primitive, so every transform can interpret it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember.core.abstract import ShapedArray
from ember.core.array import Array, wrap
from ember.errors import EmberError

__all__ = ["Eqn", "Literal", "Program", "Var", "check_program", "effectful", "eval_program", "is_effectful"]


class Var:
    """A variable of a program; identity is the object itself (names are given when printing)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A constant written into an equation (printed inline when it is a scalar).

    `value` is of `aval`'s exact dtype (a NumPy scalar such as ``np.float32(2.0)`` for a 0-d
    literal), which is what generated code uses; `array` is the same value as an ember Array of
    `aval`'s weak type, made once, which is what `eval_program` binds.
    """

    __slots__ = ("array", "aval", "value")

    def __init__(self, value: Any, aval: ShapedArray):
        buffer = np.asarray(value, dtype=aval.dtype)
        if buffer.shape != aval.shape:
            raise IRError(f"a literal of shape {buffer.shape} declared as {aval.str_short()}")
        self.value = buffer[()] if buffer.ndim == 0 else buffer
        self.aval = aval
        self.array: Array = wrap(buffer, aval.weak_type)

    def __repr__(self) -> str:
        return f"Literal({self.value!r})"


class Eqn(NamedTuple):
    """``outvars = primitive[params](*inputs)``."""

    primitive: Any
    inputs: list[Var | Literal]
    params: dict[str, Any]
    outvars: list[Var]


class Program(NamedTuple):
    """Straight-line code: constants and inputs in, equations, outputs (variables or literals) out."""

    constvars: list[Var]
    invars: list[Var]
    eqns: list[Eqn]
    outvars: list[Var | Literal]

    def __str__(self) -> str:
        return _Printer().program(self)


# Primitives with side effects (ember.debug.print's callback): an equation of one is kept by dead-code
# elimination even though nothing uses its outputs, and is neither folded nor merged with another.
# Filled by the modules that define such primitives; use `is_effectful(eqn)`, which also sees effects
# inside the programs an equation holds (a lax.cond whose branch prints).
effectful: set[Any] = set()


def is_effectful(eqn: Eqn) -> bool:
    """Whether `eqn` has a side effect: its primitive is in `effectful`, or a program it holds as a
    parameter (a control-flow branch or body, a custom rule's function) has an effectful equation."""
    if eqn.primitive in effectful:
        return True
    return any(_program_effectful(p) for p in _held_programs(eqn.params))


def _held_programs(params: dict[str, Any]) -> list[Program]:
    found = []
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            program = item if isinstance(item, Program) else getattr(item, "program", None)
            if isinstance(program, Program):
                found.append(program)
    return found


def _program_effectful(program: Program) -> bool:
    return any(is_effectful(e) for e in program.eqns)


class IRError(EmberError, AssertionError):
    """A program that breaks the IR's invariants (an internal error, not a user mistake)."""


class _Printer:
    def __init__(self) -> None:
        self.names: dict[Var, str] = {}

    def name(self, v: Var | Literal) -> str:
        if isinstance(v, Literal):
            return f"{v.value.item()!r}:{v.aval.str_short()}" if v.aval.shape == () else f"<const {v.aval.str_short()}>"
        if v not in self.names:
            n, s = len(self.names), ""
            while True:
                s = chr(ord("a") + n % 26) + s
                n = n // 26 - 1
                if n < 0:
                    break
            self.names[v] = s
        return self.names[v]

    def decl(self, v: Var) -> str:
        return f"{self.name(v)}:{v.aval.str_short()}"

    def program(self, p: Program) -> str:
        consts = " ".join(self.decl(v) for v in p.constvars)
        args = " ".join(self.decl(v) for v in p.invars)
        lines = [f"{{ lambda {consts} ; {args}. let"]
        for eqn in p.eqns:
            outs = " ".join(self.decl(v) for v in eqn.outvars)
            params = ", ".join(f"{k}={_short(v)}" for k, v in eqn.params.items())
            ins = " ".join(self.name(v) for v in eqn.inputs)
            lines.append(f"    {outs} = {eqn.primitive.name}{f'[{params}]' if params else ''} {ins}")
        lines.append(f"  in ({', '.join(self.name(v) for v in p.outvars)}) }}")
        return "\n".join(lines)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_program(program: Program) -> None:
    """Raise IRError unless every variable is defined once before use and every equation's
    output avals are what its primitive's shape rule says."""
    defined: set[Var] = set()

    def define(v: Var) -> None:
        if not isinstance(v, Var):
            raise IRError(f"expected a Var, got {v!r}")
        if v in defined:
            raise IRError(f"variable {v} is defined twice")
        defined.add(v)

    def use(v: Var | Literal, where: str) -> None:
        if isinstance(v, Var) and v not in defined:
            raise IRError(f"{where} uses variable {v} before it is defined")

    for v in (*program.constvars, *program.invars):
        define(v)
    for i, eqn in enumerate(program.eqns):
        where = f"equation {i} ({eqn.primitive.name})"
        for v in eqn.inputs:
            use(v, where)
        out = eqn.primitive.abstract_eval(*[v.aval for v in eqn.inputs], **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            raise IRError(f"{where}: {len(eqn.outvars)} output variables, the shape rule gives {len(outs)}")
        for v, aval in zip(eqn.outvars, outs):
            if v.aval != aval:
                raise IRError(f"{where}: output declared {v.aval.str_short()}, the shape rule gives {aval.str_short()}")
            define(v)
    for v in program.outvars:
        use(v, "the program's outputs")


def eval_program(program: Program, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Run `program` by binding each equation's primitive (so the active transforms see every step)."""
    env: dict[Var, Any] = dict(zip(program.constvars, consts, strict=True))
    env.update(zip(program.invars, args, strict=True))

    def read(v: Var | Literal) -> Any:
        return v.array if type(v) is Literal else env[v]

    for eqn in program.eqns:
        out = eqn.primitive.bind(*[read(v) for v in eqn.inputs], **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, out, strict=True))
        else:
            env[eqn.outvars[0]] = out
    return [read(v) for v in program.outvars]
