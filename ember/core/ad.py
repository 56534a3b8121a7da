"""What autodiff rules are written with: symbolic zeros, undefined primals and rule-shape helpers.

A primitive's jvp rule has the signature ``jvp(primals, tangents, **params) ->
(primal_out, tangent_out)`` where a tangent may be a symbolic `Zero`. A linear
primitive's transpose rule is ``transpose(ct, *args, **params) -> [ct_arg or
None, ...]`` where the linear operands arrive as `UndefinedPrimal`s and `ct`
may be a `Zero`. Rules are written with `bind` (never NumPy), so they compose
with every transform. The helpers below cover the common shapes of rules, so
that most primitives need one line each (JAX's ``defjvp``/``deflinear``).

Elementwise primitives broadcast like NumPy, so tangents are broadcast to the
output (`broadcast_to`) and cotangents summed back to the operand (`unbroadcast`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray
from ember.core.array import Array, wrap
from ember.core.primitive import PRIMITIVES, Primitive

__all__ = [
    "UndefinedPrimal", "Zero", "add_tangents", "broadcast_to", "defjvp", "deflinear", "defnondiff", "instantiate",
    "is_undefined", "unbroadcast", "zeros",
]  # fmt: skip


class Zero:
    """A symbolic zero tangent or cotangent of abstract value `aval`: costs nothing until instantiated."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear operand of an equation being transposed: only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def _p(name: str) -> Primitive:
    return PRIMITIVES[name]


def zeros(aval: ShapedArray) -> Array:
    """A concrete zero array of `aval` (a broadcast of one scalar: no memory per element)."""
    scalar = wrap(np.zeros((), aval.dtype), aval.weak_type)
    if aval.shape == ():
        return scalar
    return _p("broadcast_in_dim").bind(scalar, shape=aval.shape, broadcast_dimensions=())


def instantiate(t: Any) -> Any:
    """`t`, or real zeros when it is a symbolic `Zero`."""
    return zeros(t.aval) if type(t) is Zero else t


def add_tangents(a: Any, b: Any) -> Any:
    """a + b where either may be a symbolic Zero (or None)."""
    if a is None or type(a) is Zero:
        return b
    if b is None or type(b) is Zero:
        return a
    return _p("add").bind(a, b)


def broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """`x` broadcast to `shape` by NumPy's rule (trailing dimensions aligned)."""
    if x.shape == shape:
        return x
    lead = len(shape) - len(x.shape)
    keep = [i for i, s in enumerate(x.shape) if s == shape[lead + i]]
    if len(keep) != len(x.shape):  # drop the size-1 dimensions that stretch
        x = _p("reshape").bind(x, new_sizes=tuple(x.shape[i] for i in keep), dimensions=None)
    return _p("broadcast_in_dim").bind(x, shape=tuple(shape), broadcast_dimensions=tuple(lead + i for i in keep))


def unbroadcast(ct: Any, aval: ShapedArray) -> Any:
    """Sum `ct` over the dimensions that broadcasting added or stretched, back to `aval`'s shape."""
    if type(ct) is Zero or ct.shape == aval.shape:
        return ct
    lead = ct.ndim - len(aval.shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(aval.shape) if s == 1 and ct.shape[lead + i] != 1)
    summed = _p("reduce_sum").bind(ct, axes=axes) if axes else ct
    if summed.shape != aval.shape:
        summed = _p("reshape").bind(summed, new_sizes=aval.shape, dimensions=None)
    return summed


def _output_tangent(total: Any, ans: Any) -> Any:
    if total is None or type(total) is Zero:
        return Zero(ans.aval)
    if total.shape != ans.shape:
        total = broadcast_to(total, ans.shape)
    return total


def defjvp(primitive: Primitive, *rules: Callable[..., Any] | None) -> None:
    """Set `primitive`'s jvp from one rule per operand: ``rule(t, ans, *primals, **params)`` gives
    that operand's contribution to the output tangent (None: the operand is not differentiable).
    Contributions are summed and broadcast to the output. A rule whose derivative is zero by
    definition returns a symbolic `Zero`, so that no later rule multiplies a real zero by an
    infinite derivative (0 * inf = NaN where the math has 0)."""

    def jvp(primals, tangents, **params):
        ans = primitive.bind(*primals, **params)
        total = None
        for rule, t in zip(rules, tangents):
            if rule is not None and type(t) is not Zero:
                total = add_tangents(total, rule(t, ans, *primals, **params))
        return ans, _output_tangent(total, ans)

    primitive.jvp = jvp


def deflinear(primitive: Primitive, transpose: Callable[..., list[Any]]) -> None:
    """A primitive linear in all its operands: the jvp applies it to the tangents (symbolic zeros
    stay symbolic when all are zero), and `transpose(ct, *args, **params)` is its transpose."""

    def jvp(primals, tangents, **params):
        ans = primitive.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            outs = ans if primitive.multiple_results else [ans]
            zero = [Zero(o.aval) for o in outs]
            return ans, zero if primitive.multiple_results else zero[0]
        return ans, primitive.bind(*[instantiate(t) for t in tangents], **params)

    primitive.jvp = jvp
    primitive.transpose = transpose


def defnondiff(*primitives: Primitive) -> None:
    """Primitives whose outputs are piecewise constant (or integer): their tangent is zero."""
    for primitive in primitives:
        primitive.jvp = _zero_jvp(primitive)


def _zero_jvp(primitive: Primitive):
    def jvp(primals, tangents, **params):
        ans = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return ans, [Zero(a.aval) for a in ans]
        return ans, Zero(ans.aval)

    return jvp


def tangent_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a tangent of `dtype`: itself for floats and complex, float0 for integers and bool."""
    return dtype if dtypes.is_inexact(dtype) else dtypes.float0
