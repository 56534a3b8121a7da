"""`python -m ember`: what ember finds on this machine and what an eager op costs.

Prints the version, the backends and devices found, and eager per-op times
next to NumPy's own on tiny arrays (the overhead ember adds per call).
"""

from __future__ import annotations

import platform
import timeit

import numpy as np

import ember
import ember.numpy as enp
from ember import backends


def _best_of(stmt, number: int = 4000, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def eager_overhead_table() -> list[tuple[str, float, float]]:
    """(operation, ember microseconds, NumPy microseconds) on float32 arrays of shape (3,)."""
    a = np.arange(1, 4, dtype=np.float32)
    b = np.arange(4, 7, dtype=np.float32)
    x, y = enp.asarray(a), enp.asarray(b)
    cases = [
        ("a + b", lambda: x + y, lambda: a + b),
        ("a * b", lambda: x * y, lambda: a * b),
        ("a * 2.0", lambda: x * 2.0, lambda: a * np.float32(2.0)),
        ("sin(a)", lambda: enp.sin(x), lambda: np.sin(a)),
        ("sum(a)", lambda: enp.sum(x), lambda: np.sum(a)),
        ("a @ b", lambda: x @ y, lambda: a @ b),
        ("a[1:]", lambda: x[1:], lambda: a[1:]),
    ]
    rows = []
    for name, ours, theirs in cases:
        # Interleave the two so that machine noise hits both alike.
        t_ours = min(_best_of(ours, repeat=1) for _ in range(5))
        t_np = min(_best_of(theirs, repeat=1) for _ in range(5))
        rows.append((name, t_ours, t_np))
    return rows


def main() -> None:
    print(f"ember {ember.__version__} on Python {platform.python_version()} ({platform.machine()})")
    print("backends:")
    for name, state in backends.available().items():
        print(f"  {name:5s} {state}")
    print("devices:", ", ".join(str(d) for d in ember.devices()))
    print("\neager cost per call on float32 arrays of shape (3,), best of 5 runs:")
    print(f"  {'operation':10s} {'ember':>9s} {'NumPy':>9s} {'ratio':>7s}")
    for name, ours, theirs in eager_overhead_table():
        print(f"  {name:10s} {ours:8.2f}us {theirs:8.2f}us {ours / theirs:6.1f}x")


if __name__ == "__main__":
    main()
