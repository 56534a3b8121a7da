"""Child process for tests/test_chunking.py: the peak resident memory of one Jacobian.

Usage: python chunking_child.py MODE BUDGET M N — MODE "auto" (chunk_size="auto" under memory_budget
BUDGET bytes) or "whole" (no chunking). f(x) = sum_j tanh(x[i] * x[j]) over x of N elements (its first M
rows): an M x N intermediate, so each row of jacrev pulls back through two M x N arrays. Prints one JSON
line: the extra peak RSS over the RSS after imports, a warm-up and the inputs, the estimates and plan.
"""

import json
import resource
import sys

import numpy as np

import ember
import ember.numpy as enp
from ember.transforms import _memory


def peak_rss() -> int:
    # VmHWM, the high-water mark of this process's own memory map. (Not getrusage's ru_maxrss: Linux carries
    # that over exec from the forked parent, so a child of a large pytest process starts with its size.)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def main() -> None:
    mode, budget, m, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

    def f(x):
        return enp.tanh(enp.outer(x[:m], x)).sum(1)

    ember.config.update("memory_budget", budget)
    chunk = "auto" if mode == "auto" else None
    small = enp.asarray(np.linspace(-1, 1, 8, dtype=np.float32))
    ember.jacrev(lambda x: enp.tanh(enp.outer(x[:4], x)).sum(1), chunk_size=chunk)(small)  # warm-up: code paths loaded
    x = enp.asarray(np.linspace(-1, 1, n, dtype=np.float32))
    jac = ember.jacrev(f, chunk_size=chunk)
    y, pull = ember.vjp(f, x)
    whole = _memory.trace_peak(ember.vmap(pull), [ember.ShapeDtypeStruct((m, m), np.float32)])[0]
    del y, pull
    base = rss_now()
    J = jac(x)
    peak = peak_rss() - base
    # Row i against the derivative by hand: dy_i/dx_j = x_i (1 - tanh^2(x_i x_j)), plus sum_k x_k (1 - tanh^2(x_i x_k))
    # where j == i.
    xs = np.linspace(-1, 1, n, dtype=np.float64)
    i = m // 2
    t = 1 - np.tanh(xs[i] * xs) ** 2
    ref = xs[i] * t
    ref[i] += (xs * t).sum()
    err = float(np.max(np.abs(np.asarray(J)[i] - ref)))
    print(json.dumps({"extra_peak": peak, "whole_estimate": whole, "budget": budget, "err": err,
                      "scale": float(np.abs(xs * t).sum()), "shape": list(J.shape)}))


if __name__ == "__main__":
    main()
