"""Buffers of generated code: which equation writes its result into a dead buffer (`out=`), and which
buffers the program keeps from one call to the next.

An elementwise equation whose kernel is a NumPy ufunc, with operands and result of one real floating
dtype (and more than one element), can write into any buffer of its result's shape and dtype that nothing will read
again. Such buffers are the results of earlier ufunc equations (freshly allocated, owned by the
program), once every variable that may share their memory is dead. Whether a variable may share
memory is decided conservatively: the result of a ufunc is new memory; the result of any other
kernel (a reshape, a transpose, a call) may be a view of any of its operands. Constants, inputs
and the program's outputs are never written; an input the caller donated (jit's donate_argnums) is
treated like a buffer of the program's once it is dead, and is where returned results go first. A
fused group (fusion.py) may also write a result over an operand that dies with it, when its block
loop reads that operand for the last time no later than it writes the result.

Fresh memory is not free: a large NumPy array is a new `mmap` (or freshly trimmed heap) whose pages
fault in one by one, ~4 µs a 4 KiB page on a small VM, more than the arithmetic of an Adam update. So
the program allocates its large buffers (from 64 KiB) itself, in one of two ways:

- *kept*: a buffer no output can share (an intermediate, once every reuse of its memory is followed)
  is allocated on the first call and written again by every later one, as XLA assigns its
  temporaries once. Operands of a host callback are not kept: the host function may hold on to them.
- *recycled*: a buffer the program returns (or shows a host function) is new on each call, but the
  program remembers the last two it made at that place and writes into one again once nothing else
  references it (its reference count says so: the caller dropped the result, as a training loop
  drops the previous step's parameters). This is a caching allocator like PyTorch's, decided per
  buffer at run time, so a result the caller still holds is never touched.

Both live in an `Arena` the compiled program takes at its start and gives back at its end, so a call
that re-enters the program (a callback, another thread) takes a set of its own. Besides ufuncs, the
kernels of `dot_general` and `select_n` take `out=` for this.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["KEEP_MIN_BYTES", "Arena", "BufferPlan", "last_reads", "out_kernel", "plan_buffers", "ufunc_for"]

# Real floating dtypes only: NumPy's complex multiply takes another loop (without FMA) when its output
# aliases an operand, so the last bits would differ from eager mode's fresh output.
_REUSABLE_KINDS = {np.dtype(np.float32), np.dtype(np.float64)}
# Kernels that are not ufuncs themselves but are exactly one for inexact operands.
_INEXACT_UFUNCS = {"div": np.true_divide}
# Smaller buffers come from malloc's pools, already faulted in: keeping them would only cost lookups.
KEEP_MIN_BYTES = 64 * 1024
_CONTRACTION_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


def ufunc_for(eqn: Any, kernel: Callable[..., Any]) -> np.ufunc | None:
    """The ufunc that computes `eqn` and may take `out=`, or None."""
    fn = kernel if isinstance(kernel, np.ufunc) else _INEXACT_UFUNCS.get(eqn.primitive.name)
    if fn is None or fn.nout != 1 or eqn.params or len(eqn.outvars) != 1:
        return None
    aval = eqn.outvars[0].aval
    if aval.dtype not in _REUSABLE_KINDS or aval.size <= 1 or any(v.aval.dtype != aval.dtype for v in eqn.inputs):
        return None
    return fn


def out_kernel(eqn: Any) -> bool:
    """Whether `eqn` is not a ufunc but its kernel writes a large result into an `out=` buffer of the
    program's (C-contiguous, of the result's shape and dtype) and otherwise returns new memory. (The
    result lives in that buffer, maybe as a view of it in another order.)"""
    if len(eqn.outvars) != 1 or _nbytes(eqn.outvars[0]) < KEEP_MIN_BYTES:
        return False
    dtype = eqn.outvars[0].aval.dtype
    if eqn.primitive.name == "dot_general":
        return (dtype in _CONTRACTION_DTYPES and all(v.aval.dtype == dtype for v in eqn.inputs)
                and eqn.params.get("preferred_element_type") in (None, dtype))  # fmt: skip
    return eqn.primitive.name == "select_n" and len(eqn.inputs) > 2


def _operands_done(group: Any, candidates: Sequence[Any]) -> dict[Any, list[Any]]:
    """For each result of a fused group, the `candidates` (operands the group reads whole and for the
    last time) it may be written over: same shape and dtype, and read no later than the equation that
    makes the result."""
    last_read = {v: k for k, eqn in enumerate(group.eqns) for v in eqn.inputs}
    made_at = {eqn.outvars[0]: k for k, eqn in enumerate(group.eqns)}
    return {out: [v for v in candidates if v.aval.shape == out.aval.shape and v.aval.dtype == out.aval.dtype
                  and last_read.get(v, -1) <= made_at[out]] for out in group.outvars}  # fmt: skip


def _nbytes(v: Any) -> int:
    return v.aval.size * v.aval.dtype.itemsize


Spec = tuple[tuple[int, ...], Any]  # a buffer's shape and dtype


class Arena:
    """The buffers a compiled program allocates itself (see the module docstring): `kept` and
    `recycled` give the shapes and dtypes of each place. `take` hands out a set, the kept buffers then
    a pool for each recycled place (made on first use); `give` returns the set for the next call."""

    __slots__ = ("_idle", "kept", "recycled")

    def __init__(self, kept: Sequence[Spec], recycled: Sequence[Spec]):
        self.kept, self.recycled = list(kept), list(recycled)
        self._idle: list[list[Any]] = []

    def take(self) -> list[Any]:
        try:
            return self._idle.pop()  # atomic: two threads never get the same set
        except IndexError:
            return [*(np.empty(shape, dtype) for shape, dtype in self.kept), *([] for _ in self.recycled)]

    def give(self, buffers: list[Any]) -> None:
        self._idle.append(buffers)

    def recycle(self, pool: list[np.ndarray], place: int) -> np.ndarray:
        """A buffer for recycled place `place`: one of `pool` that nothing outside it references, or a
        new one (the pool then remembers it, and forgets its oldest beyond two)."""
        for k in range(len(pool)):
            if sys.getrefcount(pool[k]) == 2:  # the pool's reference and the call's argument
                buffer = pool.pop(k)
                pool.append(buffer)
                return buffer
        shape, dtype = self.recycled[place]
        pool.append(np.empty(shape, dtype))
        if len(pool) > 2:
            del pool[0]
        return pool[-1]


class BufferPlan:
    """Where each item of a program (an equation or a fused group) puts its results.

    `into[i]`: the variable whose dead buffer item i's result goes into (for a group, a list with a
    variable or None for each result). `alloc[i]`: for each result of item i, "kept", "recycled" or
    None (the kernel allocates) for a new buffer (see the module docstring). `fresh`: the items that
    are out= kernels (`out_kernel`), whose result is new memory."""

    __slots__ = ("alloc", "fresh", "into")

    def __init__(self) -> None:
        self.into: dict[int, Any] = {}
        self.alloc: dict[int, list[str | None]] = {}
        self.fresh: set[int] = set()


def last_reads(items: Sequence[Any]) -> dict[Any, int]:
    """For each variable an item (equation or fused group) reads, the position of the last item that
    reads it: where the variable dies unless the program returns it (also used by
    ember/transforms/_memory.py's peak-memory estimate)."""
    last: dict[Any, int] = {}
    for i, eqn in enumerate(items):
        for v in eqn.inputs:
            if type(v).__name__ != "Literal":
                last[v] = i
    return last


def plan_buffers(program: Any, kernel_for: Callable[[Any], Callable[..., Any]], items: Sequence[Any],
                 donated: Sequence[int] = ()) -> BufferPlan:  # fmt: skip
    """Plan the buffers of `items` (the program's equations, some of them fused groups: see fusion.py).
    `donated`: positions of inputs whose buffers the caller gives up (jit's donate_argnums): once
    dead, they may take results like the program's own buffers."""
    n = len(items)
    donated_vars = {program.invars[k] for k in donated}
    last_use = last_reads(items)
    for v in program.outvars:
        last_use[v] = n  # returned: never dead
    for v in (*program.constvars, *program.invars):
        if v not in donated_vars:
            last_use[v] = n  # not ours to write

    group: dict[Any, int] = {}  # variable -> id of the memory it may share
    members: dict[int, set] = {}  # group id -> variables in it that are still live
    owned: dict[int, list] = {}  # group id -> the program's buffers in it (results it allocated, donated inputs)
    free: dict[tuple, list] = {}  # (shape, dtype) -> dead fresh buffers
    memory: dict[Any, int] = {}  # fresh variable -> the allocation it lives in
    born: list[tuple[int, int, int] | None] = []  # allocation -> (item, result, bytes) that makes it
    escapes: set[int] = set()  # allocations an output or a host function may see
    plan = BufferPlan()
    new_ids = itertools.count()

    def join(var: Any, ids: set[int], into: Any = None, site: tuple[int, int] | None = None) -> None:
        """Put `var` in the group of memory `ids`; a fresh variable (a `site`) lives in `into`'s
        allocation or a new one."""
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
        if site is not None:
            owned[gid].append(var)
            if into is not None:
                memory[var] = memory[into]
            else:
                memory[var] = len(born)
                born.append(None if site == () else (*site, _nbytes(var)))

    def take(pool: list | None, var: Any) -> Any:
        """Take a buffer for `var` out of `pool` (None if it is empty): for a result of the program one
        the caller donated (the results the caller gets back then live in what it gave up), else
        preferably one of the program's own (kept or recycled, and so not allocated again)."""
        if not pool:
            return None
        returned = last_use.get(var) == n
        for k in range(len(pool) - 1, -1, -1):
            if (memory[pool[k]] in donated_memory) == returned:
                return pool.pop(k)
        return pool.pop()

    def release(var: Any) -> None:
        gid = group.get(var)
        if gid is None:
            return
        members[gid].discard(var)
        if not members[gid]:
            for buf in owned.pop(gid):
                if memory[buf] not in escapes:  # (a host function's operand stays its own)
                    free.setdefault((buf.aval.shape, buf.aval.dtype), []).append(buf)
            owned[gid] = []

    for v in (*program.constvars, *program.invars):
        join(v, set(), site=() if v in donated_vars else None)  # a donated buffer: the program's, made by nobody
    donated_memory = {memory[v] for v in donated_vars}
    for i, eqn in enumerate(items):
        dying = [v for v in dict.fromkeys(eqn.inputs) if last_use.get(v) == i]
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
        if getattr(getattr(eqn, "primitive", None), "host_call", False):
            for v in eqn.inputs:
                if v in group:
                    escapes.update(memory[b] for b in owned[group[v]])
        if type(eqn).__name__ == "Fused":
            # Fresh results, in dead buffers of earlier items or in a dying operand's once the block
            # loop has read the operand for the last time (it writes the same elements it read).
            alone = [v for v in dying if owned.get(group.get(v)) == [v] and members[group[v]] == {v} and memory[v] not in escapes]
            in_place = _operands_done(eqn, alone)
            plan.into[i] = []
            for v in eqn.outvars:
                choices = [u for u in in_place.get(v, ()) if u not in plan.into[i]]
                plan.into[i].append(take(choices, v) if choices else take(free.get((v.aval.shape, v.aval.dtype)), v))
            for v in dying:
                release(v)
                if v in plan.into[i]:  # written over in place: not free for later items
                    free[(v.aval.shape, v.aval.dtype)].remove(v)
            for k, (v, into) in enumerate(zip(eqn.outvars, plan.into[i])):
                join(v, set(), into, (i, k))
        elif out is not None and ufunc_for(eqn, kernel_for(eqn.primitive)) is not None:
            for v in dying:  # first: an operand's buffer may take the result (in place)
                release(v)
            into = take(free.get((out.aval.shape, out.aval.dtype)), out)
            if into is not None:
                plan.into[i] = into
            join(out, set(), into, (i, 0))
        elif out_kernel(eqn):  # new memory, written after the operands are read: none of theirs
            plan.fresh.add(i)
            join(out, set(), None, (i, 0))
            for v in dying:
                release(v)
        else:
            ids = {group[v] for v in eqn.inputs if v in group}
            for v in eqn.outvars:  # first: the results may be views of the operands
                join(v, ids)
                ids = {group[v]}
            for v in dying:
                release(v)
        for v in eqn.outvars:
            if v not in last_use:  # never read: dead at once
                release(v)
    for bufs in owned.values():  # groups still live at the end hold what the program returns
        escapes.update(memory[b] for b in bufs)
    for a, site in enumerate(born):
        if site is None:
            continue
        i, k, nbytes = site
        if nbytes >= KEEP_MIN_BYTES:
            plan.alloc.setdefault(i, [None] * len(items[i].outvars))[k] = "recycled" if a in escapes else "kept"
    return plan
