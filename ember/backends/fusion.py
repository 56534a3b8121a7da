"""Loop fusion for generated code: chains of elementwise equations on one large shape run in blocks.

NumPy runs each elementwise equation over the whole array, so a chain of k of them on an array
larger than the cache reads and writes memory k times (an Adam update is fourteen passes over every
weight). The compiler instead runs such a chain block by block (a slice of leading rows of about
256 KiB) with block-sized scratch buffers, so the intermediates stay in the cache and only the
chain's inputs and the results used after it touch memory once::

    for _r in range(0, 784, 128):
        _b = slice(_r, _r + 128)
        q_, k_, co_ = q[_b], k[_b], co[_b]
        np.multiply(_l2, q_, out=co_)
        ...

A fused equation computes each element exactly as the whole-array ufunc does (operands and results
are full arrays of the group's shape or scalars, and the ufuncs are correctly rounded, so the bits
do not depend on where a block starts): jit's results stay those of eager mode.

`plan_fusion` picks the groups; codegen writes their loops. Nothing here imports the core.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.backends.buffers import ufunc_for

__all__ = ["BLOCK_BYTES", "Fused", "plan_fusion"]

BLOCK_BYTES = 256 * 1024
# Correctly rounded ufuncs (IEEE 754 requires it of these): an element's result never depends on
# which SIMD lane or tail loop computes it. Transcendental functions (exp, tanh, ...) are left out.
_EXACT = frozenset(
    (np.add, np.subtract, np.multiply, np.true_divide, np.sqrt, np.negative, np.absolute, np.maximum,
     np.minimum, np.fmax, np.fmin, np.square, np.copysign, np.floor, np.ceil, np.trunc, np.rint, np.sign)
)  # fmt: skip


class Fused:
    """A group of elementwise equations run together in blocks of `rows` leading rows, in place of
    its last member. `inputs` are the values it reads from outside, `outvars` those it produces for
    the rest of the program (each in a full array); everything else lives in block scratch."""

    __slots__ = ("eqns", "inputs", "outvars", "rows", "shape")

    def __init__(self, eqns: list[Any], inputs: list[Any], outvars: list[Any], shape: tuple[int, ...], rows: int):
        self.eqns, self.inputs, self.outvars, self.shape, self.rows = eqns, inputs, outvars, shape, rows

    def __repr__(self) -> str:
        return f"Fused({len(self.eqns)} equations on {self.shape}, {self.rows} rows a block)"


def _block_rows(shape: tuple[int, ...], itemsize: int) -> int | None:
    """Leading rows per block of an array of `shape`, or None when it is not worth blocking (fewer
    than two blocks)."""
    if len(shape) == 0:
        return None
    rows = max(1, BLOCK_BYTES // (math.prod(shape[1:]) * itemsize))
    return rows if shape[0] >= 2 * rows else None


def _fusible_shape(eqn: Any, kernel_for: Callable[[Any], Callable[..., Any]]) -> tuple[int, ...] | None:
    """The shape of `eqn`'s result when it may join a group: a correctly rounded ufunc of real floats
    whose operands are arrays of the result's shape or scalars, on an array of at least two blocks."""
    if ufunc_for(eqn, kernel_for(eqn.primitive)) not in _EXACT:
        return None
    aval = eqn.outvars[0].aval
    if any(v.aval.shape not in ((), aval.shape) for v in eqn.inputs):
        return None
    if any(type(v).__name__ == "Literal" and v.aval.shape for v in eqn.inputs):
        return None  # array literals are rare; keep the planner to named operands
    return aval.shape if _block_rows(aval.shape, aval.dtype.itemsize) else None


def plan_fusion(program: Any, kernel_for: Callable[[Any], Callable[..., Any]]) -> list[Any]:
    """The program's equations in order, with each group of two or more fusible equations replaced by
    one `Fused` at the place of its last member (groups as `same_shape_groups` makes them)."""
    members = same_shape_groups(program.eqns, lambda eqn: _fusible_shape(eqn, kernel_for))
    last = {max(m): sorted(m) for m in members.values() if len(m) >= 2}
    in_group = {i for m in last.values() for i in m}
    readers: dict[Any, set[int]] = {}
    for i, eqn in enumerate(program.eqns):
        for v in eqn.inputs:
            readers.setdefault(v, set()).add(i)
    returned = {v for v in program.outvars if type(v).__name__ == "Var"}

    items: list[Any] = []
    for i, eqn in enumerate(program.eqns):
        if i in last:
            items.append(_group(program.eqns, last[i], readers, returned))
        elif i not in in_group:
            items.append(eqn)
    return items


def same_shape_groups(eqns: Sequence[Any], fusible_shape: Callable[[Any], tuple[int, ...] | None]) -> dict[int, list[int]]:
    """Group id -> the indices of the equations in the group, for the equations `fusible_shape` gives a
    shape (None: not fusible); shared with the CUDA planner (fusion_cuda.py).

    A fusible equation joins the open groups of its shape that produced its operands (merging them);
    a group closes for new members once an equation outside it reads one of its values, so running it
    at its last member's place computes everything before anyone reads it."""
    group_of: dict[Any, int] = {}  # variable -> group id (its producer's group)
    members: dict[int, list[int]] = {}
    shapes: dict[int, tuple[int, ...]] = {}
    closed: set[int] = set()
    merged: dict[int, int] = {}

    def find(g: int) -> int:
        while g in merged:
            g = merged[g]
        return g

    for i, eqn in enumerate(eqns):
        shape = fusible_shape(eqn)
        joins = {find(group_of[v]) for v in eqn.inputs if v in group_of}
        if shape is not None:
            fits = {g for g in joins if g not in closed and shapes[g] == shape}
            closed.update(joins - fits)
            gid = min(fits) if fits else i
            members.setdefault(gid, [])
            shapes[gid] = shape
            for g in sorted(fits - {gid}):
                merged[g] = gid
                members[gid] += members.pop(g)
            members[gid].append(i)
            group_of[eqn.outvars[0]] = gid
        else:
            closed.update(joins)
    return members


def _group(eqns: Sequence[Any], indices: list[int], readers: dict[Any, set[int]], returned: set[Any]) -> Fused:
    group = [eqns[i] for i in indices]
    inside = set(indices)
    produced = {eqn.outvars[0] for eqn in group}
    inputs: list[Any] = []
    for eqn in group:
        for v in eqn.inputs:
            if v not in produced and type(v).__name__ == "Var" and v not in inputs:
                inputs.append(v)
    outvars = [v for v in (e.outvars[0] for e in group) if v in returned or readers.get(v, set()) - inside]
    aval = group[0].outvars[0].aval
    return Fused(group, inputs, outvars, aval.shape, _block_rows(aval.shape, aval.dtype.itemsize))
