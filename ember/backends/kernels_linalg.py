"""Kernels of the linear-algebra primitives (cholesky, triangular_solve, lu, qr)."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def linalg_kernels(xp: ModuleType) -> dict[str, Any]:
    """The linear-algebra kernels for array module `xp`."""
    return {}
