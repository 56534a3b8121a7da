"""Memory budgets for ``chunk_size="auto"``: a program's peak memory from its IR, and the chunking of a
vmap that fits `ember.config.memory_budget`.

The estimate (`peak_bytes`) walks a program's equations in order, as NumPy would run them one by one:

- constants, inputs and array literals are live from the start to the end (the caller holds them);
- each equation allocates its results while its operands are still live; an operand is freed after its
  last use (`ember.backends.buffers.last_reads`, the liveness jit's buffer plan uses), unless the program
  returns it; a result nothing reads is freed at once;
- a result NumPy returns as a view takes no new memory and keeps its operand's memory alive while it
  lives: transpose, slice, rev, squeeze, expand_dims, broadcast_in_dim (of a contiguous operand),
  reshape of a contiguous operand, and a convert_element_type that keeps the dtype. Inputs and fresh
  results count as contiguous; a view that may not be (transpose, slice, rev, broadcast) counts as not,
  so a later reshape of it counts as a copy (NumPy may still give a view: over-estimating is the safe side);
- an equation holding programs (a scan, while or cond body; a custom rule) adds, while it runs, the
  largest of their own peaks (inputs included: counted twice, again the safe side).

Measured against a child process's peak resident memory (CPU, float32; tests/test_chunking.py runs the
first): a 100 x 7500 jacrev unchunked, estimate 606 MB, measured 606-612 MB; per-example gradients of a
784-512-10 MLP at batch 128, 208 MB net of inputs, measured 206-209 MB eager or jitted; vmap of
``tanh(outer(r, r)).sum(0)`` over 64 x 1500, 1152 MB, measured 1152 MB eager, 576 MB jitted (generated
code writes results over dead buffers: the estimate is then an upper bound). Under a 50 MB budget the
jacrev runs in 15 chunks, measured 48 MB; glibc's malloc can add a few MB (after a large free it serves
large arrays from its heap and keeps their pages: MALLOC_MMAP_THRESHOLD_ fixes that).
"""

from __future__ import annotations

import collections
import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.backends.buffers import last_reads
from ember.config import config
from ember.core.ir import Literal, Program, _held_programs
from ember.errors import MemoryBudgetError

__all__ = ["ChunkPlan", "default_budget", "format_bytes", "memory_budget", "peak_bytes", "plan_chunks"]

# Fraction of the memory available now that the default budget takes: the rest is left to what else the
# process (and the machine) allocates while the chunks run.
DEFAULT_FRACTION = 0.5

_VIEWS = {"transpose", "slice", "rev", "broadcast_in_dim"}  # NumPy views, possibly not contiguous
_SHAPE_VIEWS = {"squeeze", "expand_dims"}  # views that keep their operand's contiguity


def _nbytes(aval: Any) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def _view_of(eqn: Any, contiguous: dict[Any, bool]) -> tuple[bool, bool]:
    """Whether `eqn`'s one result is a view of its first operand, and whether that view is contiguous."""
    name = eqn.primitive.name
    x = eqn.inputs[0] if eqn.inputs else None
    if len(eqn.outvars) != 1 or x is None or isinstance(x, Literal):
        return False, True
    contig = contiguous.get(x, True)
    if name in _SHAPE_VIEWS:
        return True, contig
    if name == "broadcast_in_dim":
        return contig, False  # (it reshapes its operand first: a copy when that is not contiguous)
    if name in _VIEWS:
        return True, False
    if name == "reshape" and eqn.params.get("dimensions") is None:
        return contig, True
    if name == "convert_element_type" and eqn.outvars[0].aval.dtype == x.aval.dtype:
        return True, contig
    return False, True


def peak_bytes(program: Program, const_bytes: Sequence[int] | None = None) -> int:
    """The estimated peak memory, in bytes, of running `program` one equation at a time (see the module
    docstring for the rules). `const_bytes`: the memory the constants' values really take, where known
    (a broadcast constant is a view of something smaller); by default their shapes' sizes.

    >>> ir = ember.make_ir(lambda x: enp.exp(enp.sin(x)) * 2.0)(enp.ones(1000))   # f32: 4000 bytes each
    >>> peak_bytes(ir.program)        # x, sin(x) and exp(...) live at once; then sin(x) is freed
    12004
    """
    last = last_reads(program.eqns)
    returned = {v for v in program.outvars if not isinstance(v, Literal)}
    memory: dict[Any, int] = {}  # variable -> the allocation it lives in
    size: list[int] = []  # allocation -> bytes
    holders: list[int] = []  # allocation -> live variables in it
    contiguous: dict[Any, bool] = {}
    live = 0

    def allocate(v: Any, nbytes: int) -> None:
        nonlocal live
        memory[v] = len(size)
        size.append(nbytes)
        holders.append(1)
        live += nbytes

    def release(v: Any) -> None:
        nonlocal live
        a = memory.pop(v, None)
        if a is None:
            return
        holders[a] -= 1
        if holders[a] == 0:
            live -= size[a]

    pinned = {*program.constvars, *program.invars}
    sizes = list(const_bytes) if const_bytes is not None else [_nbytes(v.aval) for v in program.constvars]
    for v, nbytes in zip(program.constvars, sizes, strict=True):
        allocate(v, nbytes)
    for v in program.invars:
        if v not in memory:  # (a variable both a constant and an input is counted once)
            allocate(v, _nbytes(v.aval))
    seen_literals: set[int] = set()
    for eqn in program.eqns:
        for v in eqn.inputs:
            if isinstance(v, Literal) and id(v) not in seen_literals:
                seen_literals.add(id(v))
                live += _nbytes(v.aval)
    peak = live
    for i, eqn in enumerate(program.eqns):
        view, contig = _view_of(eqn, contiguous)
        if view:
            a = memory[eqn.inputs[0]]
            v = eqn.outvars[0]
            memory[v] = a
            holders[a] += 1
            contiguous[v] = contig
        else:
            for v in eqn.outvars:
                allocate(v, _nbytes(v.aval))
        held = max((peak_bytes(p) for p in _held_programs(eqn.params)), default=0)
        peak = max(peak, live + held)
        for v in dict.fromkeys(eqn.inputs):
            if not isinstance(v, Literal) and last.get(v) == i and v not in returned and v not in pinned:
                release(v)
        for v in eqn.outvars:
            if v not in last and v not in returned:  # never read: dead at once
                release(v)
    return peak


def format_bytes(n: float) -> str:
    """Bytes as people read them (powers of 1000, as free(1) -h does not; as disk sizes do).

    >>> format_bytes(999), format_bytes(1_250_000), format_bytes(2.0e9)
    ('999 B', '1.2 MB', '2.0 GB')
    """
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _available_cpu() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # (no /proc: macOS, a sandbox)


def _available_cuda(device_id: int) -> int:
    from ember.backends import _cupy

    cupy = _cupy()
    with cupy.cuda.Device(device_id):
        free, _ = cupy.cuda.runtime.memGetInfo()
    return int(free)


def default_budget(platform: str = "cpu", device_id: int = 0) -> int:
    """The budget when ``ember.config.memory_budget`` is None: `DEFAULT_FRACTION` (half) of the memory
    available now — MemAvailable in /proc/meminfo (else the free physical pages) on the CPU, the device's
    free memory (``cudaMemGetInfo``) on a GPU.

    >>> 0 < default_budget() < 2 ** 60
    True
    """
    free = _available_cuda(device_id) if platform == "cuda" else _available_cpu()
    return max(1, int(free * DEFAULT_FRACTION))


def memory_budget(values: Sequence[Any] = ()) -> int:
    """``ember.config.memory_budget``, or the default for the device of the first of `values` on one.

    >>> ember.config.update("memory_budget", 10 ** 6)
    >>> memory_budget()
    1000000
    >>> ember.config.update("memory_budget", None)
    """
    if config.memory_budget is not None:
        return config.memory_budget
    from ember.core.array import Array

    for x in values:
        if type(x) is Array:  # (a tracer's device is not known: the CPU's budget under jit)
            device = x._place.device
            return default_budget(device.platform, getattr(device, "id", 0))
    return default_budget()


class ChunkPlan:
    """How ``chunk_size="auto"`` splits a batch of `size`: `n_chunks` chunks of `chunk` examples (the last
    one smaller when `chunk` does not divide `size`), each estimated to peak at `peak` bytes (with the
    result of the whole batch, `result` bytes, held besides when there are several chunks), against
    `budget` bytes; `one` is the estimated peak of one example.

    >>> print(ChunkPlan("f", 10, 4, 1200, 400, 2000, 300))
    f on 10 examples: in 3 chunks of 4 examples (the last 2); estimated peak 1.2 kB per chunk (+ 400 B for the result) against a budget of 2.0 kB
    """

    __slots__ = ("budget", "chunk", "n_chunks", "name", "one", "peak", "result", "size")

    def __init__(self, name: str, size: int, chunk: int, peak: int, result: int, budget: int, one: int | None):
        self.name, self.size, self.chunk, self.peak, self.result, self.budget, self.one = (
            name, size, chunk, peak, result, budget, one)  # fmt: skip
        self.n_chunks = -(-size // chunk) if size else 1

    @property
    def sizes(self) -> list[int]:
        return [min(self.chunk, self.size - s) for s in range(0, self.size, self.chunk)]

    def describe(self, what: str = "examples") -> str:
        """The chunking in words, for explain()."""
        if self.n_chunks == 1:
            return (f"in one pass of {self.size} {what}; estimated peak {format_bytes(self.peak)} against a budget of "
                    f"{format_bytes(self.budget)}")  # fmt: skip
        last = self.sizes[-1]
        one = what[:-1] if self.chunk == 1 and what.endswith("s") else what
        split = f"in {self.n_chunks} chunks of {self.chunk} {one}"
        if last != self.chunk:
            split += f" (the last {last})"
        return (f"{split}; estimated peak {format_bytes(self.peak)} per chunk (+ {format_bytes(self.result)} for the "
                f"result) against a budget of {format_bytes(self.budget)}")  # fmt: skip

    def __str__(self) -> str:
        return f"{self.name} on {self.size} examples: {self.describe()}"

    def __repr__(self) -> str:
        return (f"ChunkPlan({self.name!r}, size={self.size}, chunk={self.chunk}, n_chunks={self.n_chunks}, "
                f"peak={self.peak})")  # fmt: skip


def plan_chunks(name: str, size: int, chunk_peak: Callable[[int], tuple[int, int]], budget: int) -> ChunkPlan:
    """The fewest chunks of a batch of `size` examples whose estimated peak fits `budget` bytes.

    ``chunk_peak(c) -> (peak, out)``: the estimated peak of running `c` examples at once and the bytes
    of their results. If the whole batch fits, one chunk. Otherwise every chunk's peak must fit with the
    whole result held besides (the pieces already computed, then their concatenation). Chunks are evened
    out: n chunks of ``ceil(size / n)`` (the last smaller: at most two shapes to trace). The first guess
    takes the peak as affine in the chunk size between 1 and `size` (a liveness peak is a maximum of sums
    of sizes that grow linearly with the chunk: convex, so at most that chord); the guess is then checked
    with an estimate at its size, and the number of chunks moved (galloping, then bisecting) to the
    fewest that fit: usually one or two more traces.

    >>> plan = plan_chunks("f", 10, lambda c: (100 + 50 * c, 8 * c), budget=400)
    >>> plan.n_chunks, plan.chunk, plan.sizes, plan.peak
    (3, 4, [4, 4, 2], 300)
    """
    whole, result = chunk_peak(size)
    if whole <= budget or size <= 1:
        if whole > budget:
            raise _too_big(name, size, whole, 0, budget)
        return ChunkPlan(name, size, size, whole, result, budget, whole if size == 1 else None)
    one, _ = chunk_peak(1)
    if one + result > budget or 2 * result > budget:
        raise _too_big(name, size, one, result, budget)
    peaks = {1: one, size: whole}

    def chunk_of(n: int) -> int:
        return -(-size // n)

    def fits(n: int) -> bool:
        c = chunk_of(n)
        if c not in peaks:
            peaks[c] = chunk_peak(c)[0]
        return n > 1 and peaks[c] + result <= budget

    slope = (whole - one) / (size - 1)
    guess = 1 + int((budget - result - one) // slope) if slope > 0 else size
    n = min(size, max(2, -(-size // max(1, guess))))
    if fits(n):  # fewer chunks may fit too: gallop down, then bisect (fits(lo) is False, fits(hi) True)
        hi, step = n, 1
        while n - step >= 2 and fits(n - step):
            hi, step = n - step, step * 2
        lo = max(1, n - step)
    else:
        lo, step = n, 1
        while not fits(min(size, n + step)):
            lo, step = min(size, n + step), step * 2
        hi = min(size, n + step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    chunk = chunk_of(hi)
    return ChunkPlan(name, size, chunk, peaks[chunk], result, budget, one)


def _too_big(name: str, size: int, one: int, result: int, budget: int) -> MemoryBudgetError:
    fix = ("raise it with ember.config.update('memory_budget', n_bytes) (or EMBER_MEMORY_BUDGET) or free memory, "
           "or ")  # fmt: skip
    if result and 2 * result > budget and one <= budget:
        return MemoryBudgetError(
            f"{name} with chunk_size='auto': the result of all {size} examples is {format_bytes(result)}, held twice "
            f"while the chunks are joined, and one example's estimated peak is {format_bytes(one)}: more than the "
            f"memory budget of {format_bytes(budget)} ({budget} bytes); chunking cannot make the result smaller: "
            f"{fix}return less per example (reduce over the examples inside the function, or split the batch yourself)")
    held = f" while holding the {format_bytes(result)} result of all {size}" if result else ""
    return MemoryBudgetError(
        f"{name} with chunk_size='auto': one example at a time needs an estimated {format_bytes(one)} at its peak"
        f"{held}, more than the memory budget of {format_bytes(budget)} ({budget} bytes); {fix}give the function "
        "less to do per example (smaller inputs, or lax.map over part of it)")


# --- deciding once per function and shapes ----------------------------------------------------------

# owner (the function, or the jacobian that made it) -> {call key: plan}. Weak on the owner: a cached plan
# never keeps a function alive, nor the arrays it closes over.
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PER_OWNER = 64  # plans kept per function (shapes and budgets), the least recently used going first
_RECORDERS: list[list[ChunkPlan]] = []  # explain() listens here for the plans a trace decides


def cached_plan(owner: Any, key: Any, decide: Callable[[], ChunkPlan]) -> ChunkPlan:
    """The plan for `owner` (a function) called with `key` (argument shapes and dtypes, axes, budget),
    decided once: later calls with the same key trace nothing. An owner that cannot be weakly referenced
    (an object with __slots__) is decided on each call."""
    try:
        plans = _CACHE.setdefault(owner, collections.OrderedDict())
    except TypeError:
        plans = collections.OrderedDict()
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = decide()
        if len(plans) > _PER_OWNER:
            plans.popitem(last=False)
    else:
        plans.move_to_end(key)
    for recorder in _RECORDERS:
        recorder.append(plan)
    return plan


class recording:
    """Collects the plans decided (or found cached) inside the block: ``with recording() as plans: ...``."""

    def __enter__(self) -> list[ChunkPlan]:
        self.plans: list[ChunkPlan] = []
        _RECORDERS.append(self.plans)
        return self.plans

    def __exit__(self, *exc: Any) -> None:
        _RECORDERS.remove(self.plans)


def trace_peak(fun: Callable[..., Any], avals: Sequence[Any]) -> tuple[int, int]:
    """`fun`'s estimated peak and its results' bytes for arguments of these avals, traced abstractly (the
    arguments are zero-strided stand-ins: no arithmetic, no memory)."""
    from ember.core.array import wrap
    from ember.transforms.jit import make_ir

    stand_ins = [wrap(np.broadcast_to(np.zeros((), a.dtype), a.shape), a.weak_type) for a in avals]
    closed = make_ir(fun)(*stand_ins)
    out = sum(_nbytes(v.aval) for v in closed.program.outvars)
    consts = [_held_bytes(c, v.aval) for c, v in zip(closed.consts, closed.program.constvars)]
    return peak_bytes(closed.program, consts), out


def _held_bytes(value: Any, aval: Any) -> int:
    """The memory a constant's value takes: that of the array its buffer is a view of (a broadcast of a
    small array takes the small array's), at most its shape's size; its shape's size when not known."""
    from ember.core.array import Array

    buffer = value._value if type(value) is Array else value  # (a tracer's value is not known)
    if not isinstance(buffer, np.ndarray):
        return _nbytes(aval)
    while isinstance(buffer.base, np.ndarray):
        buffer = buffer.base
    return min(buffer.nbytes, _nbytes(aval))
