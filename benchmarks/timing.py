"""Interleaved timing.

Each implementation gets a number of calls per measurement chosen so that one
measurement lasts about ``target_s`` (autoranged, like ``timeit``). Then, for
``rounds`` rounds, every implementation is measured once per round, in an order
rotated each round, so that machine noise (other processes on a shared core,
frequency changes) falls on all of them alike. The per-call time of a
measurement is its duration divided by its number of calls; the summary is the
median and the minimum over rounds.

The cost of the timing loop itself (calling a zero-argument Python callable) is
measured the same way with ``lambda: None``, interleaved with the others, and its
minimum is subtracted from every per-call time (``subtract_overhead``), so a
tiny op is compared as the op, not as op plus loop.

Noise: a run measures its own, as the spread (max - min) / median of each
implementation's per-round times. Two medians differ beyond noise when their
ratio exceeds 1 + the larger spread of the two, and at least 1 + ``NOISE_FLOOR``
(:func:`noise_threshold`); ``--compare`` and the ``jit/eager`` column use it.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NULL = "<loop>"


def steady_allocator(nbytes: int = 31 << 20) -> None:
    """Put the C allocator in the state a long-running program reaches, before anything is timed.

    glibc's malloc hands out a large block as a fresh ``mmap`` (every page faulted in on first touch,
    given back on ``free``) until the process frees such a block, after which blocks up to that size come
    from its heap and stay mapped. Without this, a NumPy reference that allocates big temporaries on every
    call pays page faults or not depending on which rows ran before it (a 13 MB per-example gradient:
    2x in time). One large block freed here makes every row run as it would in a training loop's
    steady state (glibc moves its threshold only for blocks up to 32 MB on 64-bit, header included)."""
    import numpy as np

    block = np.empty(nbytes, np.uint8)
    block.fill(0)
    del block


def _loop(f: Callable[[], Any], n: int, _timer=time.perf_counter, _repeat=itertools.repeat) -> float:
    it = _repeat(None, n)
    t0 = _timer()
    for _ in it:
        f()
    return _timer() - t0


def autorange(f: Callable[[], Any], target_s: float) -> int:
    """Number of calls so that ``n`` calls of ``f`` take about ``target_s``."""
    n = 1
    while True:
        t = _loop(f, n)
        if t >= target_s / 5 or n >= 10**8:
            break
        # grow fast while far off, but never overshoot by more than ~x10
        n = n * 10 if t <= 0 else max(n * 2, min(n * 10, int(n * target_s / 5 / t * 1.2) + 1))
    return max(1, round(n * target_s / t)) if t > 0 else n


@dataclass
class Timing:
    n: int
    per_call: list[float] = field(default_factory=list)  # seconds, one per round (after overhead subtraction)

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)

    @property
    def min(self) -> float:
        return min(self.per_call)


def time_interleaved(
    impls: dict[str, Callable[[], Any]],
    *,
    rounds: int,
    target_s: float,
    subtract_overhead: bool = True,
    warmup: int = 3,
) -> tuple[dict[str, Timing], float]:
    """Time every callable in ``impls``; returns ({name: Timing}, loop overhead per call in seconds)."""
    fns = dict(impls)
    fns[NULL] = lambda: None
    for f in fns.values():
        for _ in range(warmup):
            f()
    timings = {name: Timing(n=autorange(f, target_s)) for name, f in fns.items()}
    names = list(fns)
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(rounds):
            gc.collect()
            gc.disable()
            k = r % len(names)
            for name in names[k:] + names[:k]:
                t = timings[name]
                t.per_call.append(_loop(fns[name], t.n) / t.n)
            if gc_was_enabled:
                gc.enable()
    finally:
        if gc_was_enabled:
            gc.enable()
    overhead = timings.pop(NULL).min if subtract_overhead else 0.0
    if overhead:
        for t in timings.values():
            # never below a small fraction of the raw time: a result of 0 would make ratios meaningless
            t.per_call = [max(x - overhead, 0.05 * x) for x in t.per_call]
    else:
        timings.pop(NULL, None)
    return timings, overhead


def paired_ratios(num: Timing, den: Timing) -> list[float]:
    """Per-round ratios num/den (the two were measured in the same round)."""
    return [a / b for a, b in zip(num.per_call, den.per_call)]


#: The smallest change called a regression (or jit slower than eager), whatever the runs' own spread: with one
#: round (``--smoke``) the spread is 0, and a few percent move between runs on any machine.
NOISE_FLOOR = 0.05


def spread(per_call: list[float]) -> float:
    """One implementation's own noise in a run: (max - min) / median of its per-round times; 0 with one round."""
    if len(per_call) < 2:
        return 0.0
    med = statistics.median(per_call)
    return (max(per_call) - min(per_call)) / med if med > 0 else 0.0


def noise_threshold(*per_calls: list[float], floor: float = NOISE_FLOOR) -> float:
    """The fraction a median must move by to count as a change beyond noise: the largest :func:`spread` of the
    given per-round times (one list per run or implementation compared), and at least `floor`."""
    return max([floor, *(spread(p) for p in per_calls)])
