"""Backends: tables from primitive name to kernel, one per platform.

A backend is an array module (`xp`) plus ``{primitive name: kernel}``. Most
kernels are written once against `xp` in `ember.backends.kernels` and shared
by every backend; a backend overrides only what differs. Nothing here imports
the transforms or the core: the core looks kernels up by primitive name.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["Backend", "available", "cpu"]


class Backend:
    """A platform: its array module, buffer type and kernel table."""

    def __init__(self, platform: str, xp: ModuleType, kernels: dict[str, Callable[..., Any]]):
        self.platform = platform
        self.xp = xp
        self.ndarray = xp.ndarray
        self.kernels = kernels

    def kernel(self, name: str) -> Callable[..., Any]:
        try:
            return self.kernels[name]
        except KeyError:
            raise NotImplementedError(f"the {self.platform} backend has no kernel for primitive {name!r}") from None

    def __repr__(self) -> str:
        return f"Backend({self.platform!r}, {self.xp.__name__} {self.xp.__version__}, {len(self.kernels)} kernels)"


def _make_cpu() -> Backend:
    import numpy

    from ember.backends.kernels import make_kernels

    return Backend("cpu", numpy, make_kernels(numpy))


cpu = _make_cpu()


def available() -> dict[str, str]:
    """Each platform ember can see, with a word on its state."""
    found = {"cpu": f"NumPy {cpu.xp.__version__}"}
    try:
        import cupy
    except ImportError:
        found["cuda"] = "not available (CuPy is not installed: pip install 'ember[cuda]')"
    else:
        found["cuda"] = "CuPy is installed; the CUDA backend arrives in a later release"
    return found
