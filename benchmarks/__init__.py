"""ember benchmarks: measure, never assert.

Run ``python -m benchmarks.run [--quick] [--only NAME] [--json PATH]`` from the
repository root. Every workload times hand-written NumPy (the baseline), ember,
and PyTorch / JAX when they are importable, interleaved in one run, and the
table reports each as a ratio to NumPy. See ``benchmarks/README.md``.
"""

from benchmarks.registry import (
    REGISTRY,
    Env,
    Workload,
    register,
    register_same_op,
    same_op_impls,
    to_numpy,
    workload,
)

__all__ = ["REGISTRY", "Env", "Workload", "register", "register_same_op", "same_op_impls", "to_numpy", "workload"]
