"""Buffer reuse for generated code: which equation may write its result into a dead buffer (`out=`).

An elementwise equation whose kernel is a NumPy ufunc, with operands and result of one real floating
dtype (and more than one element), can write into any buffer of its result's shape and dtype that nothing will read
again. Such buffers are the results of earlier ufunc equations (freshly allocated, owned by the
program), once every variable that may share their memory is dead. Whether a variable may share
memory is decided conservatively: the result of a ufunc is new memory; the result of any other
kernel (a reshape, a transpose, a call) may be a view of any of its operands. Inputs, constants
and the program's outputs are never written.

Saving the allocations matters for large arrays (a fresh buffer is a page-faulting `mmap` above
glibc's threshold) and keeps the working set small.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["plan_buffers", "ufunc_for"]

# Real floating dtypes only: NumPy's complex multiply takes another loop (without FMA) when its output
# aliases an operand, so the last bits would differ from eager mode's fresh output.
_REUSABLE_KINDS = {np.dtype(np.float32), np.dtype(np.float64)}
# Kernels that are not ufuncs themselves but are exactly one for inexact operands.
_INEXACT_UFUNCS = {"div": np.true_divide}


def ufunc_for(eqn: Any, kernel: Callable[..., Any]) -> np.ufunc | None:
    """The ufunc that computes `eqn` and may take `out=`, or None."""
    fn = kernel if isinstance(kernel, np.ufunc) else _INEXACT_UFUNCS.get(eqn.primitive.name)
    if fn is None or fn.nout != 1 or eqn.params or len(eqn.outvars) != 1:
        return None
    aval = eqn.outvars[0].aval
    if aval.dtype not in _REUSABLE_KINDS or aval.size <= 1 or any(v.aval.dtype != aval.dtype for v in eqn.inputs):
        return None
    return fn


def plan_buffers(program: Any, kernel_for: Callable[[Any], Callable[..., Any]], items: Sequence[Any]) -> dict[int, Any]:
    """``{index: variable}``: item i of `items` (the program's equations, some of them fused groups:
    see fusion.py) may write its result into that variable's buffer; for a group, ``{index: [variable
    or None for each of its results]}``."""
    n = len(items)
    last_use: dict[Any, int] = {}
    for i, eqn in enumerate(items):
        for v in eqn.inputs:
            if type(v).__name__ != "Literal":
                last_use[v] = i
    for v in program.outvars:
        last_use[v] = n  # returned: never dead
    for v in (*program.constvars, *program.invars):
        last_use[v] = n  # not ours to write

    group: dict[Any, int] = {}  # variable -> id of the memory it may share
    members: dict[int, set] = {}  # group id -> variables in it that are still live
    owned: dict[int, list] = {}  # group id -> fresh buffers (ufunc results) in it
    free: dict[tuple, list] = {}  # (shape, dtype) -> dead fresh buffers
    plan: dict[int, Any] = {}
    new_ids = itertools.count()

    def join(var: Any, ids: set[int], fresh: bool) -> None:
        gid = next(new_ids) if not ids else min(ids)
        members.setdefault(gid, set())
        owned.setdefault(gid, [])
        for other in ids - {gid}:  # merge the other groups into gid
            for m in members.pop(other):
                group[m] = gid
                members[gid].add(m)
            owned[gid] += owned.pop(other)
        group[var] = gid
        if last_use.get(var, -1) > -1:
            members[gid].add(var)
        if fresh:
            owned[gid].append(var)

    def release(var: Any) -> None:
        gid = group.get(var)
        if gid is None:
            return
        members[gid].discard(var)
        if not members[gid]:
            for buf in owned.pop(gid):
                free.setdefault((buf.aval.shape, buf.aval.dtype), []).append(buf)
            owned[gid] = []

    for v in (*program.constvars, *program.invars):
        join(v, set(), fresh=False)
    for i, eqn in enumerate(items):
        dying = [v for v in set(eqn.inputs) if last_use.get(v) == i]
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
        if type(eqn).__name__ == "Fused":  # fresh results; its operands are read until it ends
            plan[i] = [(free.get((v.aval.shape, v.aval.dtype)) or [None]).pop() for v in eqn.outvars]
            for v in eqn.outvars:
                join(v, set(), fresh=True)
            for v in dying:
                release(v)
        elif out is not None and ufunc_for(eqn, kernel_for(eqn.primitive)) is not None:
            for v in dying:  # first: an operand's buffer may take the result (in place)
                release(v)
            pool = free.get((out.aval.shape, out.aval.dtype))
            if pool:
                plan[i] = pool.pop()
            join(out, set(), fresh=True)
        else:
            ids = {group[v] for v in eqn.inputs if v in group}
            for v in eqn.outvars:  # first: the results may be views of the operands
                join(v, ids, fresh=False)
                ids = {group[v]}
            for v in dying:
                release(v)
        for v in eqn.outvars:
            if v not in last_use:  # never read: dead at once
                release(v)
    return plan
