"""A batch of outer products, ``out[b] = outer(a[b], c[b])``, split over the CPU's cores.

dot_general with nothing to contract (per-example weight gradients under vmap) writes one
(m, n) matrix per example. NumPy's einsum is the fastest NumPy way to write them (BLAS takes
them as k=1 products, several times slower), but it is bound by its inner loop's overhead,
not by memory: about 3x the time of a memset of the output on one core. Its loop releases the
GIL, so parts of the batch go to helper threads and the calling thread together.

Nothing here imports the core.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import Executor, ThreadPoolExecutor

import numpy as np

__all__ = ["outer_products"]

SPLIT_MIN = 1 << 18  # output elements; below this (1 MB of float32) a hand-off costs more than it saves
_MAX_HELPERS = 3
_lock = threading.Lock()
# (the pid that made them, the helper threads, their count): a forked child makes its own
_pool: tuple[int, Executor | None, int] | None = None


def _helpers() -> tuple[Executor | None, int]:
    """This process's helper threads (created on first use), and how many there are."""
    global _pool
    pool = _pool
    if pool is None or pool[0] != os.getpid():
        with _lock:
            pool = _pool
            if pool is None or pool[0] != os.getpid():
                cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
                n = max(min(cores - 1, _MAX_HELPERS), 0)
                executor = ThreadPoolExecutor(n, thread_name_prefix="ember-outer") if n else None
                pool = (os.getpid(), executor, n)
                _pool = pool
    return pool[1], pool[2]


def outer_products(a: np.ndarray, c: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``out[b, i, j] = a[b, i] * c[b, j]`` for a (B, m) and c (B, n) of one dtype, into `out` (a
    C-contiguous (B, m, n) buffer of that dtype) when given. Each element is one product, so the
    values do not depend on how the batch is split.

    >>> outer_products(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0, 5.0]]))
    array([[[ 3.,  4.,  5.],
            [ 6.,  8., 10.]]])
    """
    batch = a.shape[0]
    if out is None:
        out = np.empty((batch, a.shape[1], c.shape[1]), np.result_type(a, c))
    executor, helpers = _helpers() if out.size >= SPLIT_MIN and batch > 1 else (None, 0)
    if executor is None:
        return np.einsum("bi,bj->bij", a, c, out=out)
    parts = min(helpers + 1, batch)
    bounds = [batch * k // parts for k in range(parts + 1)]
    futures = [
        executor.submit(np.einsum, "bi,bj->bij", a[lo:hi], c[lo:hi], out=out[lo:hi])
        for lo, hi in itertools.pairwise(bounds[1:])
    ]
    np.einsum("bi,bj->bij", a[: bounds[1]], c[: bounds[1]], out=out[: bounds[1]])
    for future in futures:
        future.result()
    return out
